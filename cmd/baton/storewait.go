package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/backoff"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// Retries of 'baton run' while its store is down: the first after up to
// waitMin, each ceiling twice the last, up to half the lease, so that a
// node campaigns within half a lease of the store answering and the
// other half is left for the election and the first due period.
const (
	waitMin = 100 * time.Millisecond
	// waitReport is how often a line says the store is still awaited.
	waitReport = time.Minute
	// attemptMin bounds one attempt to open the store from below: a
	// server that drops packets would otherwise hold it for the kernel's
	// connect timeout.
	attemptMin = 10 * time.Second
)

// storeDown reports whether err, from openStore, says the store is
// unreachable or cannot decide (store.ErrUnavailable, as each backend
// classifies its errors), which waiting may cure. A store that answers
// but is wrong (a bad URL, credentials, database, schema or file) is not
// down: waiting will not fix it.
func storeDown(err error) bool {
	var u *usageError
	return errors.Is(err, store.ErrUnavailable) && !errors.As(err, &u) && !store.Permanent(err)
}

// storeWait is how 'baton run' waits for a store that is down.
type storeWait struct {
	// open opens the store; each call is bounded by attempt.
	open    func(ctx context.Context) (store.Store, error)
	attempt time.Duration
	backoff *backoff.Backoff
	logger  *slog.Logger
	// shown is the store as the log shows it (no password).
	shown string
	// secrets are scrubbed from every error logged.
	secrets []string
	sd      *notifier // nil: no service manager
}

// wait retries open, after first failed with err (storeDown), until the
// store answers, an error comes that waiting will not fix, or ctx ends.
// It logs one line when it starts waiting, one every waitReport while it
// waits, and one when the store answers; never one per attempt.
func (w *storeWait) wait(ctx context.Context, first error) (store.Store, error) {
	began := time.Now()
	w.logger.Warn("store unavailable; waiting for it: this node campaigns once it answers",
		"store", w.shown, "err", w.clean(first))
	w.sd.status("waiting for the store: unavailable")
	attempts := 1
	lastErr := first
	report := time.NewTicker(waitReport)
	defer report.Stop()
	for {
		t := time.NewTimer(w.backoff.Next())
	sleep:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-report.C:
				waited := time.Since(began).Round(time.Second)
				w.logger.Warn("still waiting for the store", "store", w.shown, "for", waited, "attempts", attempts, "err", w.clean(lastErr))
				w.sd.status("waiting for the store: unavailable for " + waited.String())
			case <-t.C:
				break sleep
			}
		}
		actx, cancel := context.WithTimeout(ctx, w.attempt)
		st, err := w.open(actx)
		cancel()
		attempts++
		switch {
		case err == nil:
			w.logger.Info("store answered; campaigning", "store", w.shown, "waited", time.Since(began).Round(time.Millisecond), "attempts", attempts)
			return st, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !storeDown(err):
			return nil, err
		}
		lastErr = err
	}
}

// clean returns err's message as one printable line without a password:
// the store's own error, without what unavailable adds.
func (w *storeWait) clean(err error) string {
	if u, ok := errors.AsType[*unavailableError](err); ok {
		err = u.cause
	}
	return escape.String(oneLine(storeurl.Scrub(err.Error(), w.secrets...)))
}
