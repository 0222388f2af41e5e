//go:build kube

package storeurl

// The Lease store (kube://NAMESPACE), linked only in a build with the
// tag kube (go build -tags kube ./cmd/baton): it adds about 4.8 MB of
// client-go to the binary (BENCHMARKS.md), and the default build leaves
// it out until the command links it for everyone.
import _ "github.com/batonhq/baton/store/kube"

// notLinked is empty: every store is linked.
var notLinked = map[string]string{}
