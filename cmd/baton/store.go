package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// storeUsage is the --store flag's help text. It names the form of every
// registered scheme (storeurl.Forms; TestStoreUsageNamesEveryScheme).
const storeUsage = "store `URL`: sqlite:PATH (one host), postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], or mem: (in-process, for tests); " +
	"default $BATON_STORE, else sqlite:baton.db. Keep a password out of it: PostgreSQL reads $PGPASSWORD and ~/.pgpass, or use --store-file"

// storeFileUsage is the --store-file flag's help text.
const storeFileUsage = "read the store URL from the first line of `PATH` (make it readable by baton's user only), so that a password never appears " +
	"on the command line or in ps; also $BATON_STORE_FILE"

// storeFlag registers --store and --store-file on fs and returns where the
// store URL lands: empty when neither is given, meaning the environment's
// ($BATON_STORE_FILE, $BATON_STORE) or the default, resolved by
// env.openStore. The default shown by --help never contains a URL, so that
// a password in the environment never reaches the help text.
func storeFlag(fs *flag.FlagSet) *string {
	p := new(string)
	storeFlagVar(fs, p)
	return p
}

// storeFlagVar is storeFlag with the URL stored in p.
func storeFlagVar(fs *flag.FlagSet, p *string) {
	// Both given would leave one silently ignored.
	var byURL, byFile bool
	both := errors.New("--store and --store-file exclude each other; give one")
	fs.Func("store", storeUsage, func(url string) error {
		if byFile {
			return both
		}
		if strings.TrimSpace(url) == "" {
			return errors.New("the store URL must not be empty; give one such as sqlite:baton.db, or leave --store out for $BATON_STORE or the default")
		}
		*p, byURL = url, true
		return nil
	})
	fs.Func("store-file", storeFileUsage, func(path string) error {
		if byURL {
			return both
		}
		u, err := readStoreFile(path)
		if err != nil {
			return err
		}
		*p, byFile = u, true
		return nil
	})
}

// readStoreFile returns the first non-empty line of the file at path,
// trimmed: the store URL.
func readStoreFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the store URL: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cannot read the store URL from %s: %w", path, err)
	}
	return "", fmt.Errorf("%s holds no store URL; write one on its first line, e.g. postgres://baton:PASSWORD@db.internal/baton", path)
}

// resolveStoreURL returns url, or when it is empty the store URL of the
// environment: the first line of $BATON_STORE_FILE, else $BATON_STORE,
// else the default.
func resolveStoreURL(url string) (string, error) {
	if url != "" {
		return url, nil
	}
	if path := os.Getenv("BATON_STORE_FILE"); path != "" {
		u, err := readStoreFile(path)
		if err != nil {
			return "", usagef("$BATON_STORE_FILE: %v", err)
		}
		return u, nil
	}
	if s := os.Getenv("BATON_STORE"); s != "" {
		return s, nil
	}
	return storeurl.Default, nil
}

// openStore opens the store named by url (see resolveStoreURL). A
// malformed URL, an SQLite file that cannot be opened (a missing
// directory, no permission), and a store that is not a baton store
// (nothing was written) are usage errors (exit 2): the fix is in the
// caller's hands. A networked store that cannot be reached, whatever its
// backend (a PostgreSQL server that is down, an etcd cluster without
// quorum), is a runtime failure (exit 1) with the degraded-mode message of
// unavailable ('baton run' waits for it instead: openRunStore), and so is
// a damaged store (store.ErrCorrupt). No error names the URL with its
// password.
func openStore(ctx context.Context, url string) (store.Store, error) {
	url, err := resolveStoreURL(url)
	if err != nil {
		return nil, err
	}
	st, err := storeurl.Open(ctx, url)
	if err != nil {
		return nil, openError(url, err)
	}
	return st, nil
}

// openError classifies a failure to open the store at url, as openStore
// documents.
func openError(url string, err error) error {
	switch {
	case errors.Is(err, storeurl.ErrURL):
		return usagef("%v", err)
	case errors.Is(err, store.ErrUnavailable) && isNetworked(url):
		return unavailable(url, err)
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrReplaced):
		// Not the caller's input: the store is damaged (exit 1).
		return fmt.Errorf("store %s is unusable: %w", storeurl.Redact(url), err)
	}
	return usagef("cannot open store %s: %v", storeurl.Redact(url), err)
}

// isNetworked reports whether url names a store reached over the network
// (PostgreSQL, etcd: the scheme's registration says so), whose
// unavailability may pass by itself.
func isNetworked(url string) bool {
	s, ok := storeurl.Lookup(url)
	return ok && s.Networked
}

// isInProcess reports whether url names a store that lives in the
// process that opens it (mem:: the scheme's registration says so), which
// no other process can share.
func isInProcess(url string) bool {
	s, ok := storeurl.Lookup(url)
	return ok && s.InProcess
}

// openReadStore opens url read-only (storeurl.OpenReadOnly): it never
// creates or changes a file, a table or a key. A store that does not exist
// is "no baton store at ABSOLUTE PATH" (exit 1); one that cannot be read
// or is not a baton store is a usage error, as for openStore.
func openReadStore(ctx context.Context, url string) (store.Store, error) {
	url, err := resolveStoreURL(url)
	if err != nil {
		return nil, err
	}
	st, err := storeurl.OpenReadOnly(ctx, url)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, err
	case err != nil:
		return nil, openError(url, err)
	}
	return st, nil
}

// unavailable says what an unavailable store means for the election: no
// write can commit, so no leader can renew or take over and nobody acts
// until the store is back. The result wraps err.
func unavailable(url string, err error) error {
	if url == "" {
		url, _ = resolveStoreURL(url)
	}
	// What the scheme's registration says of its unavailability (etcd:
	// usually a lost quorum).
	hint := ""
	if s, ok := storeurl.Lookup(url); ok && s.Hint != "" {
		hint = " (" + s.Hint + ")"
	}
	return &unavailableError{fmt.Errorf("store unavailable: %s: %w%s: nobody can lead until it is back (degraded mode)", storeurl.Redact(url), err, hint), err}
}

// unavailableError is the error of unavailable: its message, and the
// store's own error (cause), which 'baton run' logs while it waits.
type unavailableError struct {
	error       // the whole message, wrapping cause
	cause error // the store's error
}

func (u *unavailableError) Unwrap() error { return u.error }
