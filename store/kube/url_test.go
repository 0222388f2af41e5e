package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url, ns, bad string
	}{
		{url: "kube://baton", ns: "baton"},
		{url: "kube://baton/", ns: "baton"},
		{url: "KUBERNETES://jobs?kubeconfig=/etc/kube.conf", ns: "jobs"},
		{url: "kube://", bad: "names no namespace"},
		{url: "kube://a/b", bad: "more than one path part"},
		{url: "kube://a?kubeconfig=x&kubeconfig=y", bad: "given 2 times"},
		{url: "kube://a?context=x", bad: "unknown parameter context"},
		{url: "etcd://a", bad: "does not start with kube://"},
		{url: "kube://a?session-hold=10m&qps=200", ns: "a"},
		{url: "kube://a?session-hold=soon", bad: "session-hold=\"soon\" is not a duration"},
		{url: "kube://a?qps=1e3", bad: "qps=\"1e3\" is not a whole number"},
	} {
		ns, _, err := ParseURL(tc.url)
		if tc.bad != "" {
			var ue *storedriver.URLError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("ParseURL(%q) = %v, want a URL error saying %q", tc.url, err, tc.bad)
			}
			continue
		}
		if err != nil || ns != tc.ns {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", tc.url, ns, err, tc.ns)
		}
	}
}

// TestOpenRefusesABadNamespace: the namespace is checked before any call.
func TestOpenRefusesABadNamespace(t *testing.T) {
	_, err := Open(context.Background(), nil, "Not_A_Namespace")
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "Not_A_Namespace") {
		t.Fatalf("Open: %v, want ErrInvalid naming the namespace", err)
	}
}

func TestSchemeRegistered(t *testing.T) {
	s, ok := storedriver.LookupScheme("kube://ns")
	if !ok || !s.Networked || s.Names[0] != "kube" {
		t.Fatalf("LookupScheme(kube://ns) = %+v, %v", s, ok)
	}
}

// TestOpenOptionErrors: Open refuses a bad option before it reaches the
// API server, with an error wrapping store.ErrInvalid and the module's
// field-error type naming the option, as every backend does
// (storedriver.InvalidOption).
func TestOpenOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		option string
		opt    Option
	}{
		{"kubeconfig", WithKubeconfig("")},
		{"clock", WithClock(nil)},
		{"session-hold", WithSessionHold(500 * time.Millisecond)},
		{"session-hold", WithSessionHold(9000 * time.Hour)},
		{"qps", WithQPS(0)},
		{"qps", WithQPS(1 << 40)},
	} {
		_, err := Open(context.Background(), nil, "baton", tc.opt)
		var fe *bound.Error
		if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &fe) || fe.Option != tc.option {
			t.Errorf("Open with a bad %s: %v, want ErrInvalid and a field error naming it", tc.option, err)
		}
	}
}
