package baton

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

// Transfer asks the leader of name to hand over to the node to. The request
// names the token the operator expects the leader to hold; if the record has
// moved on since (another term began), it is refused with ErrStaleToken; a
// token above the current one, which no term has had yet, is refused with
// ErrTokenAhead. Either way nothing is written. The leader notices at its next renewal, stops its work,
// and releases the record to the target, which takes it at once if it is
// campaigning; other nodes wait out the lease first.
func Transfer(ctx context.Context, st store.Store, name, to string, expectToken uint64) error {
	if to == "" {
		return fmt.Errorf("baton: transfer of %q needs a target node", name)
	}
	return request(ctx, st, name, to, expectToken)
}

// RequestResign asks the leader of name to resign, guarded by the token the
// operator expects it to hold like Transfer. Any other campaigning node may
// then take the record at once; the resigned leader, if it campaigns again,
// leaves it to the others for two poll intervals first.
func RequestResign(ctx context.Context, st store.Store, name string, expectToken uint64) error {
	return request(ctx, st, name, store.AnyNode, expectToken)
}

func request(ctx context.Context, st store.Store, name, to string, expectToken uint64) error {
	for {
		rec, err := st.Get(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("baton: %w: %q has never had a leader", ErrNotLeader, name)
		}
		if err != nil {
			return err
		}
		if expectToken > rec.Token {
			return fmt.Errorf("%w: %q is at token %d, the request expected %d", ErrTokenAhead, name, rec.Token, expectToken)
		}
		if rec.Token != expectToken {
			return fmt.Errorf("%w: %q is at token %d, the request expected %d", ErrStaleToken, name, rec.Token, expectToken)
		}
		if rec.Free() {
			return fmt.Errorf("baton: %w: %q is free (token %d)", ErrNotLeader, name, rec.Token)
		}
		rec.Transfer = to
		_, err = st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested})
		if errors.Is(err, store.ErrConflict) {
			continue // a renewal raced us; the token check decides again
		}
		return err
	}
}
