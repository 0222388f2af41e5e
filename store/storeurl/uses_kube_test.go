//go:build kube

package storeurl_test

// uses is the list of URL forms a bad URL's message ends with, the Lease
// store's among them (built with the tag kube).
const uses = "sqlite:PATH, postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], kube://NAMESPACE[?kubeconfig=PATH] for the Lease objects of a Kubernetes namespace, or mem: for a throwaway in-process store"
