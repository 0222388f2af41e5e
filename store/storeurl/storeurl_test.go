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

// The messages of bad URLs, word for word: the schemes come from the
// registry (each backend registers its own), and the messages are the
// ones the baton command always printed.
func TestBadURLMessages(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", `bad store URL "": no scheme; use ` + uses},
		{"baton.db", `bad store URL "baton.db": no scheme; use ` + uses},
		{"mem:x", `bad store URL "mem:x": mem: takes nothing after the colon`},
		{"MEM:x", `bad store URL "MEM:x": mem: takes nothing after the colon`},
		{"sqlite:", `bad store URL "sqlite:": no file path after sqlite:`},
		{"sqlite3:", `bad store URL "sqlite3:": no file path after sqlite:`},
		{"file:", `bad store URL "file:": no file path after sqlite:`},
		{"sqlite:///tmp/x.db", `bad store URL "sqlite:///tmp/x.db": write sqlite:PATH (e.g. sqlite:/var/lib/baton.db), not sqlite://`},
		{"redis://localhost", `bad store URL "redis://localhost": unknown scheme "redis"; use ` + uses},
		{"redis://u:pw@localhost", `bad store URL "redis://u:xxxxx@localhost": unknown scheme "redis"; use ` + uses},
		{":x", `bad store URL ":x": no scheme; use ` + uses},
		{"Sqlite://x", `bad store URL "Sqlite://x": write sqlite:PATH (e.g. sqlite:/var/lib/baton.db), not sqlite://`},
	} {
		_, err := storeurl.Open(t.Context(), tc.url)
		if err == nil || err.Error() != tc.want || !errors.Is(err, storeurl.ErrURL) {
			t.Errorf("Open(%q): %v\nwant %s", tc.url, err, tc.want)
		}
	}
}

// Every shipped backend registered its scheme, and Lookup finds each by
// any of its names, whatever the case.
func TestSchemesRegistered(t *testing.T) {
	for _, tc := range []struct {
		url       string
		form      string
		networked bool
		path      bool
	}{
		{"sqlite:a.db", "sqlite:PATH", false, true},
		{"SQLITE3:a.db", "sqlite:PATH", false, true},
		{"file:a.db", "sqlite:PATH", false, true},
		{"postgres://h/db", "postgres://USER@HOST/DB", true, false},
		{"postgresql://h/db", "postgres://USER@HOST/DB", true, false},
		{"etcd://h:2379", "etcd://HOST:PORT[,HOST:PORT]", true, false},
		{"mem:", "mem:", false, false},
	} {
		s, ok := storeurl.Lookup(tc.url)
		if !ok || s.Form != tc.form || s.Networked != tc.networked || s.Path != tc.path {
			t.Errorf("Lookup(%q) = %+v, %v; want form %q, networked %v, path %v", tc.url, s, ok, tc.form, tc.networked, tc.path)
		}
	}
	for _, u := range []string{"redis://h", "baton.db", ""} {
		if s, ok := storeurl.Lookup(u); ok {
			t.Errorf("Lookup(%q) = %+v, want none", u, s)
		}
	}
}
