package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

// Known returns nil when the store knows name (an election record, a job
// or a ledger row), an error wrapping ErrUnknown naming it when it knows
// nothing of it, and the store's error otherwise. Every command on a name
// reports an unknown one with this error, so all say the same.
func Known(ctx context.Context, st store.Store, name string) error {
	_, err := st.Get(ctx, name)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	_, err = st.GetJob(ctx, name)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	rows, err := st.RecentRuns(ctx, name, "", 1)
	if err != nil || len(rows) > 0 {
		return err
	}
	return fmt.Errorf("%s: %w", name, ErrUnknown)
}
