//go:build lab && !nolab

package main

import "github.com/batonhq/baton/internal/lab/drill/netdrill"

// The lab build (go build -tags lab ./cmd/baton): 'baton drill --net'
// on test hosts in network namespaces, with an embedded etcd cluster and
// porcupine. The operator's binary is built without it.
func init() { drillLab = netdrill.Lab{} }
