package main

import (
	"context"
	"os"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// defaultStore is the store URL used when neither --store nor BATON_STORE
// is given.
const defaultStore = "sqlite:baton.db"

// storeSchemes lists the schemes openStore knows, for error messages.
const storeSchemes = "mem:"

// storeFromEnv returns BATON_STORE, or defaultStore when it is unset or
// empty: the default of every --store flag.
func storeFromEnv() string {
	if s := os.Getenv("BATON_STORE"); s != "" {
		return s
	}
	return defaultStore
}

// storeUsage is the --store flag's help text.
const storeUsage = "store URL: " + storeSchemes + " (in-process, for tests); also from $BATON_STORE"

// openStore opens the store named by url. A malformed URL or a scheme this
// build does not have is a usage error; so is a store that cannot be
// opened, since nothing was written.
func openStore(ctx context.Context, url string) (store.Store, error) {
	scheme, rest, ok := strings.Cut(url, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/\\ ") {
		return nil, usagef("store URL %q: want SCHEME:ADDRESS, such as mem:", url)
	}
	switch scheme {
	case "mem":
		if rest != "" {
			return nil, usagef("store URL %q: mem: takes no address (it is one process's memory)", url)
		}
		return memstore.New(), nil
	}
	return nil, usagef("store URL %q: scheme %q is not available in this build; available: %s", url, scheme, storeSchemes)
}
