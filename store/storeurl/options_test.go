package storeurl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/postgres"
	"github.com/batonhq/baton/store/sqlite"
)

// TestBackendOptionsReturnOptionError: every backend's Open refuses an
// invalid option before it touches a file or the network, with an error
// that wraps store.ErrInvalid and the module's one field-error type
// (*baton.OptionError, an alias of *bound.Error, which the root package's
// TestConstructorsReturnOptionError checks for the other constructors)
// naming the option.
func TestBackendOptionsReturnOptionError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // nothing may dial: an Open that reached the network fails otherwise
	path := filepath.Join(t.TempDir(), "never.db")
	for _, tc := range []struct {
		call   string
		option string
		err    func() error
	}{
		{"sqlite.Open(WithBusyTimeout 0)", "busy-timeout", func() error { _, err := sqlite.Open(ctx, path, sqlite.WithBusyTimeout(0)); return err }},
		{"sqlite.Open(WithMaxConns 1)", "max-conns", func() error { _, err := sqlite.Open(ctx, path, sqlite.WithMaxConns(1)); return err }},
		{"sqlite.Open(WithWatchInterval 0)", "watch-interval", func() error { _, err := sqlite.Open(ctx, path, sqlite.WithWatchInterval(0)); return err }},
		{"sqlite.Open(WithTime nil)", "clock", func() error { _, err := sqlite.Open(ctx, path, sqlite.WithTime(nil)); return err }},
		{"postgres.Open(WithPoolConfig nil)", "pool-config", func() error {
			_, err := postgres.Open(ctx, "postgres://baton@127.0.0.1:1/baton", postgres.WithPoolConfig(nil))
			return err
		}},
		{"etcd.Open(WithPrefix empty)", "prefix", func() error { _, err := etcd.Open(ctx, []string{"127.0.0.1:1"}, etcd.WithPrefix("")); return err }},
		{"etcd.Open(WithDialTimeout 0)", "dial-timeout", func() error { _, err := etcd.Open(ctx, []string{"127.0.0.1:1"}, etcd.WithDialTimeout(0)); return err }},
		{"etcd.Open(WithRequestTimeout -1)", "request-timeout", func() error {
			_, err := etcd.Open(ctx, []string{"127.0.0.1:1"}, etcd.WithRequestTimeout(-1))
			return err
		}},
		{"memstore.Open(WithTime nil)", "clock", func() error { _, err := memstore.Open(ctx, memstore.WithTime(nil)); return err }},
	} {
		err := tc.err()
		var fe *bound.Error
		switch {
		case !errors.Is(err, store.ErrInvalid) || !errors.As(err, &fe):
			t.Errorf("%s: %v (%T), want an error wrapping store.ErrInvalid and a *baton.OptionError naming %s", tc.call, err, err, tc.option)
		case fe.Option != tc.option:
			t.Errorf("%s: %v names %q, want %q", tc.call, err, fe.Option, tc.option)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an Open refused for its options left a file at %s (%v)", path, err)
	}
}
