package electortest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// eventually retries call until it succeeds or d has passed.
func (c *Cluster) eventually(what string, d time.Duration, call func(ctx context.Context) error) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), c.Timing.CallTimeout)
		err := call(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: still failing after %v: %v", what, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Check stops every node and checks the evidence, read through st (a
// handle the test keeps open): never two Valid terms at once; tokens rising
// with every term won, every term ended for a known cause; the election
// log's acquisitions strictly raising the token; applied writes never going
// back in token, each under a token the log shows acquired by the writer; a
// term whose lease expired ended before the next term was won (T_safe);
// and, when the Runner ran, a ledger without gaps whose done periods were
// each executed exactly once under the token the ledger records.
func (c *Cluster) Check(st store.Store) {
	t := c.t
	t.Helper()
	c.StopAll()
	c.mu.Lock()
	for _, e := range c.errs {
		t.Error(e)
	}
	c.mu.Unlock()

	var evs []store.Event
	c.eventually("reading the election log", 15*time.Second, func(ctx context.Context) (err error) {
		evs, err = st.History(ctx, Name, 0, 0)
		return err
	})
	holderOf := map[uint64]string{}
	var last uint64
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("log event %d has seq %d", i+1, ev.Seq)
		}
		switch ev.Kind {
		case store.Acquired, store.TakenOver, store.Transferred:
			if ev.Token <= last {
				t.Errorf("log event %d (%s by %s) has token %d, not above the previous acquisition's %d", ev.Seq, ev.Kind, ev.Holder, ev.Token, last)
			}
			last = ev.Token
			holderOf[ev.Token] = ev.Holder
		default:
			if ev.Token < last {
				t.Errorf("log event %d (%s) lowers the token to %d from %d", ev.Seq, ev.Kind, ev.Token, last)
			}
		}
	}
	t.Logf("election log: %d events, last acquisition at token %d", len(evs), last)

	var applied []Write
	c.eventually("reading the resource", 15*time.Second, func(ctx context.Context) (err error) {
		applied, err = c.Res.Applied(ctx)
		return err
	})
	perToken := map[uint64]int{}
	var high uint64
	for i, w := range applied {
		if w.Token < high {
			t.Errorf("applied write %d by %s carries token %d after an applied %d", i, w.Node, w.Token, high)
		}
		high = max(high, w.Token)
		perToken[w.Token]++
		if h, ok := holderOf[w.Token]; !ok || h != w.Node {
			t.Errorf("applied write %d by %s with token %d: the log has that token acquired by %q", i, w.Node, w.Token, h)
		}
	}
	t.Logf("applied fenced writes: %d (per token %v), acknowledged: %d", len(applied), perToken, len(c.Acked()))

	c.checkTerms()
	if c.Runner {
		c.checkLedger(st)
	}
}

// checkTerms checks the terms every node won: tokens unique and rising in
// the order the terms were won, each ended for a known cause, and a term
// that ran out its lease ended (its own deadline) strictly before the next
// term was won.
func (c *Cluster) checkTerms() {
	t := c.t
	t.Helper()
	type won struct {
		node string
		TermRec
	}
	var all []won
	for _, n := range c.Nodes() {
		for _, r := range n.Terms() {
			all = append(all, won{n.ID, r})
		}
	}
	slices.SortFunc(all, func(a, b won) int { return a.Won.Compare(b.Won) })
	causes := map[string]int{}
	for i, w := range all {
		if i > 0 && w.Term.Token() <= all[i-1].Term.Token() {
			t.Errorf("term %s/%d won after %s/%d: tokens must rise", w.node, w.Term.Token(), all[i-1].node, all[i-1].Term.Token())
		}
		switch err := w.Term.Err(); {
		case errors.Is(err, baton.ErrLeaseExpired), errors.Is(err, baton.ErrDeposed), errors.Is(err, baton.ErrResigned):
			causes[err.Error()]++
		default:
			t.Errorf("term %s/%d ended with cause %v", w.node, w.Term.Token(), err)
		}
	}
	t.Logf("%d terms; causes: %v", len(all), causes)
	slices.SortFunc(all, func(a, b won) int { return cmp.Compare(a.Term.Token(), b.Term.Token()) })
	for i := 1; i < len(all); i++ {
		prev, next := all[i-1], all[i]
		if errors.Is(prev.Term.Err(), baton.ErrLeaseExpired) && !prev.Term.Deadline().Before(next.Won) {
			t.Errorf("%s's term %d expired at %v, not before %s's term %d was won at %v",
				prev.node, prev.Term.Token(), prev.Term.Deadline().Format("15:04:05.000"), next.node, next.Term.Token(), next.Won.Format("15:04:05.000"))
		}
	}
}

// checkLedger reads the ledger and checks: periods follow each other
// without a gap; every done row's token is the token of exactly one
// successful execution of that period; rows not final only at the end.
func (c *Cluster) checkLedger(st store.Store) {
	t := c.t
	t.Helper()
	var rows []store.Run
	c.eventually("reading the ledger", 15*time.Second, func(ctx context.Context) (err error) {
		rows, err = st.Runs(ctx, Name, "", 0)
		return err
	})
	c.mu.Lock()
	execs := slices.Clone(c.execs)
	c.mu.Unlock()
	done, reruns := 0, 0
	var prev time.Time
	for i, r := range rows {
		at, err := schedule.ParseKey(r.Period)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && at.Sub(prev) != time.Second {
			t.Errorf("ledger: period %s follows %s: a period is missing", r.Period, schedule.Key(prev))
		}
		prev = at
		if r.Attempt > 1 {
			reruns++
		}
		switch r.State {
		case store.Done:
			done++
			n := 0
			for _, x := range execs {
				if x.Period == r.Period && x.Token == r.Token {
					n++
				}
			}
			if n != 1 {
				t.Errorf("period %s is done under token %d, with %d executions under that token", r.Period, r.Token, n)
			}
		case store.Running, store.Pending:
			if i < len(rows)-2 {
				t.Errorf("period %s still %s with later periods run: %+v", r.Period, r.State, r)
			}
		default:
			t.Errorf("period %s is %s: %q", r.Period, r.State, r.Output)
		}
	}
	t.Logf("ledger: %d rows, %d done, %d taken over by a later term; executions: %d", len(rows), done, reruns, len(execs))
}

// DoneThrough waits until every scheduled period of the job up to and
// including through is done.
func (c *Cluster) DoneThrough(st store.Store, through time.Time, within time.Duration) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(within)
	every, _ := schedule.Every(time.Second, 0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), c.Timing.CallTimeout)
		job, jerr := st.EnsureJob(ctx, store.Job{Name: Name})
		rows, rerr := st.Runs(ctx, Name, "", 0)
		cancel()
		missing := ""
		if err := errors.Join(jerr, rerr); err != nil {
			missing = err.Error()
		} else {
			state := map[string]store.RunState{}
			for _, r := range rows {
				state[r.Period] = r.State
			}
			for p := every.Next(job.Created); !p.After(through); p = every.Next(p) {
				if state[schedule.Key(p)] != store.Done {
					missing = fmt.Sprintf("period %s is %q", schedule.Key(p), state[schedule.Key(p)])
					break
				}
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("periods through %s not all done within %v: %s", schedule.Key(through), within, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CheckCutTakeover checks the takeover of a leader cut off from the store
// at cut: the old term (first) stepped down at ended, and leader took
// over with next. The takeover comes at least lease + 2e (Timing.Safe)
// after the old leader's last successful renewal started, and at most
// bound after it; the old deadline is before the takeover; the token
// rises.
func CheckCutTakeover(t *testing.T, tm Timing, first, next *TermRec, leader *Node, cut, ended time.Time, bound time.Duration) {
	t.Helper()
	lastRenewal := first.Term.Deadline().Add(-tm.Lease)
	takeover := next.Won.Sub(lastRenewal)
	t.Logf("cut at +0; a's last successful renewal started at %v, a stepped down at %v, %s took over at %v with token %d",
		lastRenewal.Sub(cut).Round(time.Millisecond), ended.Sub(cut).Round(time.Millisecond), leader.ID, next.Won.Sub(cut).Round(time.Millisecond), next.Term.Token())
	if takeover < tm.Safe()-time.Millisecond || takeover > bound {
		t.Errorf("takeover %v after a's last renewal started, want within [%v, %v]", takeover, tm.Safe(), bound)
	}
	if !first.Term.Deadline().Before(next.Won) {
		t.Errorf("a's deadline %v is not before the takeover %v", first.Term.Deadline(), next.Won)
	}
	if next.Term.Token() <= first.Term.Token() {
		t.Errorf("token %d after %d", next.Term.Token(), first.Term.Token())
	}
}
