package memstore_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/storetest"
)

// embedsStore is a wrapper that embeds store.Store: it declares the
// inner store's capabilities and implements none of their interfaces.
type embedsStore struct{ store.Store }

// undeclared implements every capability memstore has and declares none.
type undeclared struct{ *memstore.Store }

func (undeclared) Capabilities() store.Capabilities { return 0 }

// TestConformanceSeesAFalseDeclaration: storetest.Run's Capabilities case
// fails a store that declares a capability it does not implement (a
// wrapper that forgot the methods) and one that implements a capability
// it does not declare (a backend that forgot the declaration), naming
// the capability. It runs the case in a child process (a failed case
// fails its test).
func TestConformanceSeesAFalseDeclaration(t *testing.T) {
	switch os.Getenv("BATON_FALSE_CAPS") {
	case "embeds":
		storetest.Run(t, func(t *testing.T) func() store.Store {
			s := memstore.New()
			return func() store.Store { return embedsStore{s.Client("")} }
		})
		return
	case "undeclared":
		storetest.Run(t, func(t *testing.T) func() store.Store {
			s := memstore.New()
			return func() store.Store { return undeclared{s} }
		})
		return
	}
	for _, tc := range []struct{ env, want string }{
		{"embeds", "declares store-time|ordered-feed|successions (Capabilities) but does not implement it"},
		{"undeclared", "implements store-time|ordered-feed|successions but does not declare it"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestConformanceSeesAFalseDeclaration$/^Capabilities$", "-test.count", "1")
		cmd.Env = append(os.Environ(), "BATON_FALSE_CAPS="+tc.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %v, want the Capabilities case to fail with %q:\n%s", tc.env, err, tc.want, out)
		}
	}
}
