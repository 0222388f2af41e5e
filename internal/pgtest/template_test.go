package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A server's cluster is a copy of the cached one of its binaries, once
// the first server made it; a cached cluster that does not start is
// dropped, and one that others may write is not used.
func TestTemplateCluster(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	first := NewServer(t)
	tmpl := templateDir(first.bindir)
	if tmpl == "" || !trusted(tmpl) {
		t.Fatalf("no trusted cached cluster at %q after the first server", tmpl)
	}
	copied := NewServer(t)
	if err := copied.Exec(ctx, "CREATE TABLE mine (a int)"); err != nil {
		t.Fatal(err)
	}
	if err := first.Exec(ctx, "CREATE TABLE mine (a int)"); err != nil {
		t.Fatalf("the servers share a cluster: %v", err)
	}

	// A cached cluster that cannot start.
	if err := os.WriteFile(filepath.Join(tmpl, "data", "PG_VERSION"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewServer(t).Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("the server made after a broken cached cluster: %v", err)
	}
	if _, err := os.Stat(tmpl); !os.IsNotExist(err) {
		t.Fatalf("the cached cluster that did not start is still there: %v", err)
	}
	NewServer(t)
	if !trusted(tmpl) {
		t.Fatal("the next server cached no cluster again")
	}

	// One that others may write.
	if err := os.Chmod(tmpl, 0o777); err != nil {
		t.Fatal(err)
	}
	if trusted(tmpl) {
		t.Fatal("a cached cluster others may write is trusted")
	}
	if err := NewServer(t).Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("the server made beside an untrusted cached cluster: %v", err)
	}
}
