package main

import (
	"context"
	"errors"
	"os"

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
// is in the caller's hands.
func openStore(ctx context.Context, url string) (store.Store, error) {
	st, err := storeurl.Open(ctx, url)
	switch {
	case errors.Is(err, storeurl.ErrURL):
		return nil, usagef("%v", err)
	case err != nil:
		return nil, usagef("cannot open store %s: %v", url, err)
	}
	return st, nil
}
