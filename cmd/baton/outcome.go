package main

// The outcome of a scheduled run, recorded by the command's supervisor the
// moment the command exits (package supervise, Record), so that a baton
// stopped or frozen between the exit and its own record does not leave
// the period to run again.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/internal/supervise"
	"github.com/batonhq/baton/store"
)

// outcomeRequest is what the supervisor is handed, on a pipe (never in
// its arguments or environment: the store URL may hold a password), to
// record a run's outcome.
type outcomeRequest struct {
	Store  string `json:"store"`
	Job    string `json:"job"`
	Period string `json:"period"`
	Node   string `json:"node"`
	Token  uint64 `json:"token"`
}

// outcomeRecord returns the supervisor's Record for the run of period
// under token, or nil when the store cannot be opened by another process
// (tests' in-memory stores): baton then records the outcome alone.
func (r *runner) outcomeRecord(period string, token uint64) *supervise.Record {
	if r.recordStore == "" {
		return nil
	}
	data, err := json.Marshal(outcomeRequest{Store: r.recordStore, Job: r.cfg.job.Name, Period: period, Node: r.el.Node(), Token: token})
	if err != nil {
		return nil
	}
	return &supervise.Record{Data: data, Tail: tailSize}
}

// errNotThisRun is recordOutcome's answer when the period's row is not
// running under the request's token and node any more.
var errNotThisRun = errors.New("the period's row is not this run's any more")

// recordOutcome is the supervisor's Recorder (main calls
// supervise.MainRecording with it): it opens the store and writes the
// outcome with the very write the scheduler machine's record action
// makes (scheduler.CompleteSeen: done for exit 0, failed otherwise, the
// tail of the output, at the row's version), to the row that is running
// under this token and node. An exit the supervisor saw before the lease
// deadline (inLease) ended inside the term: its record is fenced by the
// row alone, so it counts also once a newer term exists, as long as that
// term has not taken the row over (it waits scheduler's TakeoverGrace
// first); otherwise it is fenced by the token, refused once a newer term
// exists (store.ErrStaleToken). A store that cannot answer yet (a write
// lock held by a frozen process: baton itself, stopped inside a SQLite
// write) is tried again until ctx ends. The machine, recording the same
// outcome later, reads the row back and counts it as its own.
func recordOutcome(ctx context.Context, data []byte, st supervise.Status, inLease bool, out []byte) error {
	var req outcomeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return fmt.Errorf("garbled record request: %w", err)
	}
	tl := &tail{}
	tl.Write(out)
	finished := time.Now()
	var s store.Store
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := func() error {
			if s == nil {
				var err error
				if s, err = openStore(ctx, req.Store); err != nil {
					return err
				}
			}
			row, err := s.GetRun(ctx, req.Job, req.Period)
			if err != nil {
				return err
			}
			if row.State != store.Running || row.Token != req.Token || row.Holder != req.Node {
				return fmt.Errorf("%w (%s, token %d)", errNotThisRun, row.State, row.Token)
			}
			_, err = s.SwapRun(ctx, scheduler.CompleteSeen(row, st.ExitCode(), tl.String(), nil, finished, inLease))
			return err
		}()
		if err == nil || !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
