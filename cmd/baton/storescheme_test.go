package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/store/storedriver"
)

// The command knows no scheme of its own: what it says of a store URL
// (networked, in-process, a file path, the hint of its unavailability,
// the forms in --store's help) comes from the backends' registrations.
func TestStoreSchemesFromTheRegistry(t *testing.T) {
	all := storedriver.Schemes()
	if len(all) < 4 {
		t.Fatalf("%d schemes registered, want the four shipped backends'", len(all))
	}
	for _, s := range all {
		if !strings.Contains(storeUsage, s.Form) {
			t.Errorf("--store's help does not name %s", s.Form)
		}
		for _, name := range s.Names {
			u := strings.ToUpper(name[:1]) + name[1:] + ":x"
			if isNetworked(u) != s.Networked || isInProcess(u) != s.InProcess {
				t.Errorf("%s: networked %v, in-process %v; registered %+v", u, isNetworked(u), isInProcess(u), s)
			}
			if got := describeStore(name + ":rel.db"); s.Path != (got == name+":"+mustAbs(t, "rel.db")) {
				t.Errorf("describeStore(%s:rel.db) = %q; registered path %v", name, got, s.Path)
			}
		}
	}
	if isNetworked("redis://h") || isInProcess("baton.db") {
		t.Error("an unregistered scheme is networked or in-process")
	}
	if got := unavailable("etcd://h:1", storedriver.BadURL("x")).Error(); !strings.Contains(got, "(no quorum?)") {
		t.Errorf("etcd unavailable: %q, want the registered hint", got)
	}
	if got := unavailable("postgres://u:s3cret@h/db", storedriver.BadURL("x")).Error(); strings.Contains(got, "quorum") || strings.Contains(got, "s3cret") {
		t.Errorf("postgres unavailable: %q", got)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
