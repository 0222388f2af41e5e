package sqlite_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// A path that cannot be a store is an invalid request, not an
// unavailable store: waiting will not create its directory (baton run
// waits for an unavailable store and exits 2 on this).
func TestOpenPathThatCannotBe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for what, path := range map[string]string{
		"directory that does not exist": filepath.Join(dir, "no", "such", "baton.db"),
		"file for a directory":          filepath.Join(file, "baton.db"),
	} {
		for _, ro := range []bool{false, true} {
			var opts []sqlite.Option
			if ro {
				opts = append(opts, sqlite.WithReadOnly())
			}
			s, err := sqlite.Open(ctx(t), path, opts...)
			if err == nil {
				s.Close()
				t.Fatalf("%s (read-only %v): opened", what, ro)
			}
			if errors.Is(err, store.ErrUnavailable) || !(errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound)) {
				t.Errorf("%s (read-only %v): %v, want an invalid request (or no store, read-only), not unavailable", what, ro, err)
			}
		}
	}
}
