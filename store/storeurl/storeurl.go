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
//
// Each backend registers its scheme once (storedriver.Register, from its
// own package); this package links the four shipped backends and reads
// the registry for everything it knows of a URL: how to open it (Open),
// how to write one (Forms), whether the store is networked or a local
// file (Lookup). The baton command and the drill ask it, and know no
// scheme themselves.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"

	// The shipped backends, linked for their schemes (storedriver.Register).
	_ "github.com/batonhq/baton/store/etcd"
	_ "github.com/batonhq/baton/store/memstore"
	_ "github.com/batonhq/baton/store/postgres"
	_ "github.com/batonhq/baton/store/sqlite"
)

// Default is the store URL used when none is given.
const Default = "sqlite:baton.db"

// ErrURL is wrapped by every error about the form of a store URL, as
// opposed to a store that could not be reached or read.
var ErrURL = errors.New("bad store URL")

// Scheme is what a backend registered of a URL scheme.
type Scheme = storedriver.Scheme

// Lookup returns the registered scheme of rawURL (the text before its
// first colon, whatever its case), if any.
func Lookup(rawURL string) (Scheme, bool) { return storedriver.LookupScheme(rawURL) }

// Forms returns how each registered scheme's URLs are written, by rank,
// for a message: "sqlite:PATH, postgres://USER@HOST/DB,
// etcd://HOST:PORT[,HOST:PORT], or mem: for a throwaway in-process store".
func Forms() string {
	var b strings.Builder
	all := storedriver.Schemes()
	for i, s := range all {
		switch {
		case i > 0 && i == len(all)-1:
			b.WriteString(", or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(s.Form)
		if s.Note != "" {
			b.WriteString(" " + s.Note)
		}
	}
	return b.String()
}

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
	name, _, ok := strings.Cut(rawURL, ":")
	if !ok || name == "" {
		return nil, fmt.Errorf("%w %q: no scheme; use %s", ErrURL, shown, Forms())
	}
	sch, ok := Lookup(rawURL)
	if !ok {
		if build, ok := notLinked[strings.ToLower(name)]; ok {
			return nil, fmt.Errorf("%w %q: this build does not link the %q store; %s, or use %s", ErrURL, shown, name, build, Forms())
		}
		return nil, fmt.Errorf("%w %q: unknown scheme %q; use %s", ErrURL, shown, name, Forms())
	}
	st, err := sch.Open(ctx, rawURL, readOnly)
	if ue, ok := errors.AsType[*storedriver.URLError](err); ok {
		return nil, fmt.Errorf("%w %q: %s", ErrURL, shown, ue.Reason)
	}
	return st, err
}
