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
