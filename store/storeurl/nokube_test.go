//go:build !kube

package storeurl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/batonhq/baton/store/storeurl"
)

// A build without the Lease store says how to get one for a kube:// URL.
func TestKubeNotLinked(t *testing.T) {
	_, err := storeurl.Open(context.Background(), "kube://default")
	if !errors.Is(err, storeurl.ErrURL) || err.Error() != kubeURLError {
		t.Fatalf("Open(kube://default) = %v; want %q", err, kubeURLError)
	}
}
