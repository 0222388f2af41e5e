//go:build !kube

package storeurl_test

// uses is the list of URL forms a bad URL's message ends with.
const uses = "sqlite:PATH, postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], or mem: for a throwaway in-process store"

// kubeURLError is what a kube:// URL gets from a build without the Lease
// store: the build that links it, not "unknown scheme".
const kubeURLError = `bad store URL "kube://default": this build does not link the "kube" store; use the release's baton-kube binary, or build baton with the Lease store linked: go build -tags kube ./cmd/baton, or use ` + uses
