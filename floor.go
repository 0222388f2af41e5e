package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

// MaxTokenFloor is the largest token floor RaiseTokenFloor sets:
// store.MaxToken less one, the token of the next term.
const MaxTokenFloor = store.MaxToken - 1

// RaiseTokenFloor makes sure that the next term of name gets a token above
// floor: it raises the election record's token to floor (creating a free
// record at floor if name never had a leader), and never lowers it. It
// returns the record as stored.
//
// Use it after restoring a store from a backup, or after a store was lost
// and created afresh: such a store knows only the tokens it issued before
// the backup (or none), while fenced resources may have accepted higher
// ones since, and would refuse the new leader's writes, or worse, accept a
// token a second time if they reset. Set the floor to the highest token the
// old store handed out for name (baton history, a fenced resource's
// recorded token, the leader's BATON_TOKEN in its logs); any value above it
// is safe too.
//
// A leader holding name when the floor is raised is deposed at its next
// renewal (its token is no longer the record's); run it with the nodes of
// name stopped, or accept one takeover.
//
// floor is at most MaxTokenFloor, so that the next term's token fits in
// every store; a larger one is an error wrapping store.ErrInvalid, and
// nothing is written.
func RaiseTokenFloor(ctx context.Context, st store.Store, name string, floor uint64) (store.Record, error) {
	if err := store.CheckName(name); err != nil {
		return store.Record{}, err
	}
	if floor > MaxTokenFloor {
		return store.Record{}, fmt.Errorf("baton: %w: token floor %d of %q is above %d, the largest floor: a baton store holds tokens up to %d and the next leader needs one more",
			store.ErrInvalid, floor, name, uint64(MaxTokenFloor), uint64(store.MaxToken))
	}
	for {
		rec, err := st.Get(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			rec = store.Record{Name: name}
		case err != nil:
			return store.Record{}, err
		}
		if rec.Token >= floor {
			return rec, nil
		}
		next := rec
		next.Token = floor
		out, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: next, Event: store.FloorRaised})
		if errors.Is(err, store.ErrConflict) {
			continue // a renewal or takeover raced us: read again
		}
		if err != nil {
			return store.Record{}, fmt.Errorf("baton: raising the token floor of %q to %d: %w", name, floor, err)
		}
		return out, nil
	}
}
