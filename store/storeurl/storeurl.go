// Package storeurl opens a store from a URL, for programs that let their
// operators choose the backend: the baton command, the drill, a service's
// configuration file. It links every backend; a program that uses one
// backend can import that backend's package alone instead.
//
// The forms:
//
//	sqlite:PATH                  an SQLite file on this host (the default: sqlite:baton.db)
//	postgres://USER@HOST/DB      PostgreSQL (also postgresql://); ?schema=NAME (default baton)
//	etcd://HOST:PORT[,HOST:PORT]  an etcd cluster; ?prefix=/baton/ (the default)
//	mem:                         an in-process store, gone when the process ends (tests)
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/memstore"
	"github.com/batonhq/baton/store/postgres"
	"github.com/batonhq/baton/store/sqlite"
)

// Default is the store URL used when none is given.
const Default = "sqlite:baton.db"

// ErrURL is wrapped by every error about the form of a store URL, as
// opposed to a store that could not be reached or read.
var ErrURL = errors.New("bad store URL")

const forms = "use sqlite:PATH, postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], or mem: for a throwaway in-process store"

// Open opens the store named by rawURL, creating it (a file, a schema, a
// schema version key) if it does not exist yet. No error it returns quotes
// a password: the URL is quoted redacted (see Redact), and the passwords
// are scrubbed from the backend's own messages.
func Open(ctx context.Context, rawURL string) (store.Store, error) {
	st, err := open(ctx, rawURL, false)
	if err != nil {
		return nil, scrub(err, rawURL)
	}
	return st, nil
}

// OpenReadOnly opens the store named by rawURL for reading only: it never
// creates a file, a table or a key and never writes (the backends'
// WithReadOnly). A store that does not exist is an error wrapping
// store.ErrNotFound ("no baton store at ..."); a file or database that is
// not a baton store one wrapping store.ErrSchema, and it is left as it
// was. mem: opens an empty in-process store. Errors quote no password, as
// for Open.
func OpenReadOnly(ctx context.Context, rawURL string) (store.Store, error) {
	st, err := open(ctx, rawURL, true)
	if err != nil {
		return nil, scrub(err, rawURL)
	}
	return st, nil
}

func open(ctx context.Context, rawURL string, readOnly bool) (store.Store, error) {
	shown := Redact(rawURL)
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("%w %q: no scheme; %s", ErrURL, shown, forms)
	}
	switch strings.ToLower(scheme) {
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("%w %q: mem: takes nothing after the colon", ErrURL, shown)
		}
		return memstore.Open(ctx)
	case "sqlite", "sqlite3", "file":
		if strings.HasPrefix(rest, "//") {
			return nil, fmt.Errorf("%w %q: write sqlite:PATH (e.g. sqlite:/var/lib/baton.db), not sqlite://", ErrURL, shown)
		}
		if rest == "" {
			return nil, fmt.Errorf("%w %q: no file path after sqlite:", ErrURL, shown)
		}
		if readOnly {
			return sqlite.Open(ctx, rest, sqlite.WithReadOnly())
		}
		return sqlite.Open(ctx, rest)
	case "etcd":
		if readOnly {
			return etcd.OpenURL(ctx, rawURL, etcd.WithReadOnly())
		}
		return etcd.OpenURL(ctx, rawURL)
	case "postgres", "postgresql":
		if readOnly {
			return postgres.Open(ctx, rawURL, postgres.WithReadOnly())
		}
		return postgres.Open(ctx, rawURL)
	default:
		return nil, fmt.Errorf("%w %q: unknown scheme %q; %s", ErrURL, shown, scheme, forms)
	}
}
