//go:build !kube

package storeurl

// notLinked names the schemes of stores that exist but that this build
// leaves out, with the build that links them: a URL of one gets that
// line instead of "unknown scheme".
var notLinked = map[string]string{
	"kube": "use the release's baton-kube binary, or build baton with the Lease store linked: go build -tags kube ./cmd/baton",
}
