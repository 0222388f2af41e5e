package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/internal/backoff"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// What waiting may cure is the store's own classification: unavailable,
// and nothing that says the store answered wrongly.
func TestStoreDown(t *testing.T) {
	down := fmt.Errorf("postgres: open: %w: connection refused", store.ErrUnavailable)
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{down, true},
		{unavailable("postgres://h/db", down), true},
		{usagef("cannot open store sqlite:/no/dir/b.db: %v", down), false},
		{fmt.Errorf("%w: %w", store.ErrUnavailable, store.ErrCorrupt), false},
		{fmt.Errorf("postgres: open: %w", store.ErrSchema), false},
		{errors.New(`postgres: open: FATAL: password authentication failed for user "baton" (SQLSTATE 28P01)`), false},
	} {
		if got := storeDown(tc.err); got != tc.want {
			t.Errorf("storeDown(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// waitStore runs a storeWait, on virtual time, against a store that is down
// until up and answers from then on (or fails with final at up, when not
// nil), and returns what it returned, when, after how many attempts, and
// its log.
func waitStore(t *testing.T, up time.Duration, final error) (st store.Store, err error, at time.Duration, attempts int, log string) {
	t.Helper()
	var buf bytes.Buffer
	attempts = 1 // the first, which failed before wait
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		down := fmt.Errorf("postgres: open: %w: dial tcp 127.0.0.1:5432: connect: connection refused", store.ErrUnavailable)
		w := &storeWait{
			open: func(ctx context.Context) (store.Store, error) {
				attempts++
				if time.Since(start) < up {
					return nil, unavailable("postgres://baton:s3cret@db/ops", down)
				}
				if final != nil {
					return nil, final
				}
				return memstore.New(), nil
			},
			attempt: 10 * time.Second,
			backoff: backoff.New(100*time.Millisecond, 15*time.Second, rand.New(rand.NewPCG(1, 2))),
			logger:  slog.New(slog.NewTextHandler(&buf, nil)),
			shown:   "postgres://baton:xxxxx@db/ops",
			secrets: []string{"s3cret"},
		}
		st, err = w.wait(t.Context(), unavailable("postgres://baton:s3cret@db/ops", down))
		at = time.Since(start)
	})
	return st, err, at, attempts, buf.String()
}

// A store down for 5 minutes: one line when the wait starts, one a
// minute while it lasts, one when the store answers, which is found
// within the backoff's cap (15s) of its coming back; never a line per
// attempt, never a password.
func TestStoreWaitLogs(t *testing.T) {
	up := 5 * time.Minute
	st, err, at, attempts, log := waitStore(t, up, nil)
	if err != nil || st == nil {
		t.Fatalf("wait: %v", err)
	}
	t.Logf("answered at %v after %d attempts; log:\n%s", at, attempts, log)
	if at < up || at-up >= 15*time.Second {
		t.Errorf("store found back at %v, want within 15s of %v", at, up)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if n := strings.Count(log, "store unavailable; waiting for it"); n != 1 {
		t.Errorf("%d lines saying the wait started, want 1", n)
	}
	if n := strings.Count(log, "still waiting for the store"); n != 5 {
		t.Errorf("%d lines saying it still waits over %v, want one a minute (5)", n, at)
	}
	if n := strings.Count(log, "store answered; campaigning"); n != 1 || !strings.Contains(lines[len(lines)-1], "store answered") {
		t.Errorf("want one last line saying the store answered")
	}
	if !strings.Contains(log, fmt.Sprintf("attempts=%d", attempts)) {
		t.Errorf("the last line does not count the %d attempts", attempts)
	}
	if len(lines) >= attempts || strings.Contains(log, "s3cret") {
		t.Errorf("%d log lines for %d attempts (want fewer), or a password in the log", len(lines), attempts)
	}
	for _, want := range []string{"for=1m0s", "for=2m0s", "for=5m0s", "connection refused"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(log, "nobody can lead until it is back") {
		t.Errorf("the log repeats the failure message of a command that exits; want the store's error")
	}
}

// An error that waiting will not fix, coming after the store was down,
// ends the wait at once with that error.
func TestStoreWaitStopsOnWrongStore(t *testing.T) {
	wrong := fmt.Errorf("postgres: open: %w: schema version 99", store.ErrSchema)
	_, err, at, _, _ := waitStore(t, 30*time.Second, wrong)
	if !errors.Is(err, store.ErrSchema) || at-30*time.Second >= 15*time.Second {
		t.Fatalf("wait returned %v at %v, want the schema error within 15s of 30s", err, at)
	}
}

// ensureFails is a store whose EnsureJob answers store.ErrUnavailable
// while fails is above zero, counting it down: a store that answered the
// open but not the job's registration (a PostgreSQL restarting, an
// SQLite file another process holds locked).
type ensureFails struct {
	store.Store
	fails *atomic.Int32
}

func (s ensureFails) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if s.fails.Add(-1) >= 0 {
		return store.Job{}, fmt.Errorf("sqlite: ensure job: %w: database is locked", store.ErrUnavailable)
	}
	return s.Store.EnsureJob(ctx, j)
}

// TestRunWaitsForTheJobsRegistration: 'baton run' of a scheduled job
// whose store opens but cannot register the job yet waits for it, as for
// a store that is down, instead of exiting (CI saw a node give up when
// another process held its SQLite file locked longer than the busy
// timeout, just after it opened the store).
func TestRunWaitsForTheJobsRegistration(t *testing.T) {
	ms := memstore.New()
	var fails atomic.Int32
	fails.Store(2)
	errb := &syncBuffer{}
	e := &env{stdout: &syncBuffer{}, stderr: errb, open: func(context.Context, string) (store.Store, error) {
		return ensureFails{ms.Client(""), &fails}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- e.run(ctx, []string{"run", "--store", "mem:", "--node", "n1", "--lease", "1s", "--every", "1h", "billing", "--", "true"})
	}()
	if !testenv.WaitFor(30*time.Second, func() bool { return strings.Contains(errb.String(), "elected") }) {
		cancel()
		t.Fatalf("not elected after the registration failed twice (exit %v):\n%s", <-done, errb)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, errb)
	}
	if !strings.Contains(errb.String(), "store unavailable; waiting for it") || fails.Load() >= 0 {
		t.Fatalf("no wait for the registration (fails left %d):\n%s", fails.Load(), errb)
	}
}
