package store_test

import (
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// declares is a memstore handle that declares caps, whatever it
// implements.
type declares struct {
	*memstore.Store
	caps store.Capabilities
}

func (d declares) Capabilities() store.Capabilities { return d.caps }

// hides is a store that implements none of the optional interfaces and
// declares what its inner store does (as a wrapper that embeds
// store.Store does).
type hides struct{ store.Store }

// The accessors hand out a capability only when the store declares it
// and implements it: an undeclared method is never reached, and a
// declaration without the method gives nothing.
func TestCapabilityAccessors(t *testing.T) {
	ms := memstore.New()
	if got, want := store.Usable(ms), ms.Capabilities(); got != want || !want.Has(store.CapSuccession|store.CapOrderedFeed|store.CapStoreTime) {
		t.Fatalf("memstore: usable %v, declared %v", got, want)
	}
	if _, ok := store.SucceederOf(ms); !ok {
		t.Error("SucceederOf(memstore) = false")
	}
	for _, tc := range []struct {
		st   store.Store
		want store.Capabilities
	}{
		{declares{ms, 0}, 0},
		{declares{ms, store.CapSuccession}, store.CapSuccession},
		{declares{ms, store.AllCapabilities}, store.AllCapabilities &^ store.CapIdentity},
		{hides{ms}, 0},
	} {
		if got := store.Usable(tc.st); got != tc.want {
			t.Errorf("%T declaring %v: usable %v, want %v", tc.st, tc.st.Capabilities(), got, tc.want)
		}
		_, ok := store.SucceederOf(tc.st)
		if ok != tc.want.Has(store.CapSuccession) {
			t.Errorf("%T declaring %v: SucceederOf %v", tc.st, tc.st.Capabilities(), ok)
		}
		_, ok = store.TimeSourceOf(tc.st)
		if ok != tc.want.Has(store.CapStoreTime) {
			t.Errorf("%T declaring %v: TimeSourceOf %v", tc.st, tc.st.Capabilities(), ok)
		}
		if store.OrderedFeedOf(tc.st) != tc.want.Has(store.CapOrderedFeed) {
			t.Errorf("%T declaring %v: OrderedFeedOf %v", tc.st, tc.st.Capabilities(), !tc.want.Has(store.CapOrderedFeed))
		}
	}
	if _, ok := store.IdentifierOf(nil); ok {
		t.Error("IdentifierOf(nil) = true")
	}
}

func TestCapabilitiesString(t *testing.T) {
	for c, want := range map[store.Capabilities]string{
		0:                                        "none",
		store.CapSuccession:                      "successions",
		store.CapIdentity | store.CapOrderedFeed: "identity|ordered-feed",
		store.AllCapabilities:                    "identity|store-time|ordered-feed|successions",
		1 << 7:                                   "unknown",
	} {
		if got := c.String(); got != want {
			t.Errorf("%#x: %q, want %q", uint8(c), got, want)
		}
	}
}
