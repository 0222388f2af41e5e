//go:build kube

package storeurl

// The Lease store (kube://NAMESPACE), linked only in a build with the
// tag kube (go build -tags kube ./cmd/baton): it adds about 4.8 MB of
// client-go to the binary (BENCHMARKS.md), so the operator's release
// binary leaves it out and the release's baton-kube binaries link it
// (scripts/release.sh).
import _ "github.com/batonhq/baton/store/kube"

// notLinked is empty: every store is linked.
var notLinked = map[string]string{}
