package storedriver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
)

// Unsupported returns the error that a method of capability c answers on
// a store that does not declare c: errors.ErrUnsupported, naming c. A
// wrapper implements every optional interface and forwards its inner
// store's declaration (Capabilities), so that it keeps every capability
// by construction; the methods of those the inner store lacks answer
// this (StoreID answers "", FeedInOrder false), and so do not count as
// implemented (CheckCapabilities).
func Unsupported(c store.Capabilities) error {
	return fmt.Errorf("%w: the store lacks %v", errors.ErrUnsupported, c)
}

// CheckCapabilities returns an error naming every capability that st
// declares (store.Store.Capabilities) and does not implement, or
// implements and does not declare, with the fix; nil when its
// declaration is true. A store implements a capability when it has the
// capability's interface and the interface answers: StoreID a non-empty
// id, FeedInOrder true, StoreTime and HeldThrough anything but
// errors.ErrUnsupported (it calls them once, on st as it is).
// storetest.Run calls it on a fresh store.
func CheckCapabilities(ctx context.Context, st store.Store) error {
	declared, has := st.Capabilities(), implemented(ctx, st)
	var msgs []string
	if d := declared & store.AllCapabilities &^ has; d != 0 {
		msgs = append(msgs, fmt.Sprintf("%T declares %v (Capabilities) but does not implement it: implement its interface, or leave it out of Capabilities", st, d))
	}
	if u := has &^ declared; u != 0 {
		msgs = append(msgs, fmt.Sprintf("%T implements %v but does not declare it (Capabilities), so the library never uses it: declare it", st, u))
	}
	if d := declared &^ store.AllCapabilities; d != 0 {
		msgs = append(msgs, fmt.Sprintf("%T declares capabilities unknown to package store (%#x)", st, uint8(d)))
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", store.ErrInvalid, strings.Join(msgs, "; "))
}

// implemented returns the capabilities whose interfaces st implements and
// that answer, whatever st declares (see CheckCapabilities).
func implemented(ctx context.Context, st store.Store) store.Capabilities {
	var c store.Capabilities
	if id, ok := st.(store.Identifier); ok && id.StoreID() != "" {
		c |= store.CapIdentity
	}
	if ts, ok := st.(store.TimeSource); ok {
		if _, err := ts.StoreTime(ctx); !errors.Is(err, errors.ErrUnsupported) {
			c |= store.CapStoreTime
		}
	}
	if o, ok := st.(store.OrderedFeed); ok && o.FeedInOrder() {
		c |= store.CapOrderedFeed
	}
	if h, ok := st.(store.Succeeder); ok {
		if _, err := h.HeldThrough(ctx, store.SessionPrefix+"storedriver/check/1", "", 1); !errors.Is(err, errors.ErrUnsupported) {
			c |= store.CapSuccession
		}
	}
	return c
}
