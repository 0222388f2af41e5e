//go:build !kube

package storeurl_test

// uses is the list of URL forms a bad URL's message ends with.
const uses = "sqlite:PATH, postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], or mem: for a throwaway in-process store"
