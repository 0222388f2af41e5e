package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

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
