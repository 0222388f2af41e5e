package schedule

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

// ErrAlreadyDone is returned by Trigger for a period whose run is done: a
// done row never changes, so the period cannot run again.
var ErrAlreadyDone = errors.New("the period is already done")

// Trigger writes a durable pending row for job's period key (Manual set),
// which the job's leader runs when the key's instant is not after its wall
// time: at once for a key in the past. It needs no leader. A failed or
// skipped period is made pending again (a re-run); a pending or running one
// is left as it is (the returned row says which, and written is false); a
// done one is refused with ErrAlreadyDone. It reads the row once and
// writes it once (again only if another write came between).
func Trigger(ctx context.Context, st store.Store, job, key string) (run store.Run, written bool, err error) {
	at, err := ParseKey(key)
	if err != nil {
		return store.Run{}, false, err
	}
	if job == "" {
		return store.Run{}, false, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	for {
		cur, err := st.GetRun(ctx, job, key)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Run{}, false, err
		}
		switch cur.State {
		case store.Done:
			return cur, false, fmt.Errorf("%s/%s: %w", job, key, ErrAlreadyDone)
		case store.Pending, store.Running:
			return cur, false, nil
		}
		row := store.Run{Job: job, Period: key, Scheduled: at, State: store.Pending,
			Manual: true, Attempt: cur.Attempt, Token: cur.Token}
		got, err := st.SwapRun(ctx, store.RunSwap{Expect: cur.Version, Run: row})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return got, err == nil, err
	}
}
