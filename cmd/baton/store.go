package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// storeFromEnv returns BATON_STORE, or the default store URL when it is
// unset or empty: the default of every --store flag.
func storeFromEnv() string {
	if s := os.Getenv("BATON_STORE"); s != "" {
		return s
	}
	return storeurl.Default
}

// storeUsage is the --store flag's help text.
const storeUsage = "store URL: sqlite:PATH (one host), postgres://USER@HOST/DB, etcd://HOST:PORT[,HOST:PORT], or mem: (in-process, for tests); also from $BATON_STORE"

// openStore opens the store named by url. A malformed URL, and a store that
// cannot be opened or read (nothing was written), are usage errors: the fix
// is in the caller's hands. An etcd cluster that answers but cannot decide
// (no quorum) is not: it fails with the degraded-mode message of
// unavailable (exit 1).
func openStore(ctx context.Context, url string) (store.Store, error) {
	st, err := storeurl.Open(ctx, url)
	switch {
	case errors.Is(err, storeurl.ErrURL):
		return nil, usagef("%v", err)
	case errors.Is(err, store.ErrUnavailable) && isEtcd(url):
		return nil, unavailable(url, err)
	case err != nil:
		return nil, usagef("cannot open store %s: %v", url, err)
	}
	return st, nil
}

// isEtcd reports whether url names an etcd cluster, whose unavailability
// is usually a lost quorum.
func isEtcd(url string) bool { return strings.HasPrefix(strings.ToLower(url), "etcd:") }

// unavailable says what an unavailable store means for the election: no
// write can commit, so no leader can renew or take over and nobody acts
// until the store is back. The result wraps err.
func unavailable(url string, err error) error {
	hint := ""
	if isEtcd(url) {
		hint = " (no quorum?)"
	}
	return fmt.Errorf("store unavailable: %s: %w%s: nobody can lead until it is back (degraded mode)", url, err, hint)
}
