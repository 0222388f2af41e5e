package storeurl_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"mem:", "sqlite:" + filepath.Join(dir, "a.db")} {
		s, err := storeurl.Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, err := s.Get(t.Context(), "x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%q: Get: %v", u, err)
		}
		s.Close()
	}
}

func TestBadURLs(t *testing.T) {
	for _, u := range []string{"", "baton.db", "mem:x", "sqlite:", "sqlite:///tmp/x.db", "redis://localhost"} {
		if _, err := storeurl.Open(t.Context(), u); !errors.Is(err, storeurl.ErrURL) {
			t.Errorf("Open(%q): %v, want ErrURL", u, err)
		}
	}
}

func TestNotAStoreIsRefusedAndUntouched(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.txt")
	body := []byte("these are my notes, not a database\n")
	os.WriteFile(p, body, 0o644)
	if _, err := storeurl.Open(t.Context(), "sqlite:"+p); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("Open of a text file: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(body) {
		t.Fatal("the file was modified")
	}
}

func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	_, err := storeurl.OpenReadOnly(t.Context(), "sqlite:"+missing)
	if !errors.Is(err, store.ErrNotFound) || err.Error() != "no baton store at "+missing {
		t.Fatalf("OpenReadOnly of a missing file: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read-only open created %s", missing)
	}
	if _, err := storeurl.OpenReadOnly(t.Context(), "baton.db"); !errors.Is(err, storeurl.ErrURL) {
		t.Errorf("OpenReadOnly of a bad URL: %v", err)
	}
	path := filepath.Join(dir, "a.db")
	w, err := storeurl.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := storeurl.OpenReadOnly(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.EnsureJob(t.Context(), store.Job{Name: "j", Schedule: "every 1s"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a write through a read-only store: %v, want ErrInvalid", err)
	}
}
