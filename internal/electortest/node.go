package electortest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// TermRec is one term a node won.
type TermRec struct {
	Term *baton.Term
	// Won is when Run handed the term to the node's work.
	Won time.Time
	// Ended is when the node's work saw the term end (zero: not yet).
	Ended time.Time
}

// Node is one baton node: an Elector on its own store handle.
type Node struct {
	ID    string
	Store store.Store
	El    *baton.Elector

	c      *Cluster
	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once

	mu    sync.Mutex
	terms []*TermRec
	cur   *TermRec
}

// lead is the node's work while it holds term.
func (n *Node) lead(ctx context.Context, term *baton.Term, runner *schedule.Runner) error {
	rec := &TermRec{Term: term, Won: time.Now()}
	n.mu.Lock()
	n.terms = append(n.terms, rec)
	n.cur = rec
	n.mu.Unlock()
	// Not stopped when lead returns: lead's ctx is a child of the term's,
	// and when the term ends the child may be cancelled (and lead return)
	// before this function is started; stopping it then would leave Ended
	// unset for good.
	context.AfterFunc(term.Context(), func() {
		n.mu.Lock()
		rec.Ended = time.Now()
		n.mu.Unlock()
	})
	var wg sync.WaitGroup
	if runner != nil {
		wg.Go(func() { runner.Run(ctx, term) })
	}
	tk := time.NewTicker(n.c.Timing.WriteEvery)
	defer tk.Stop()
	for {
		decided := time.Now()
		if term.Valid() {
			n.c.write(ctx, n.ID, term.Token(), "", decided)
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			n.mu.Lock()
			if n.cur == rec {
				n.cur = nil
			}
			n.mu.Unlock()
			return ctx.Err()
		case <-tk.C:
		}
	}
}

// Valid returns n's current term and whether it is Valid now.
func (n *Node) Valid() (*TermRec, bool) {
	n.mu.Lock()
	cur := n.cur
	n.mu.Unlock()
	return cur, cur != nil && cur.Term.Valid()
}

// Terms returns a copy of the terms n won.
func (n *Node) Terms() []TermRec {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []TermRec
	for _, r := range n.terms {
		out = append(out, *r)
	}
	return out
}

// Stop stops n's campaign (resigning a term it holds), closes its elector
// and its store handle. It is idempotent.
func (n *Node) Stop() {
	n.stop.Do(func() {
		if n.cancel != nil {
			n.cancel()
			select {
			case <-n.done:
			case <-time.After(10 * time.Second):
				n.c.t.Errorf("node %s did not stop within 10s", n.ID)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.El.Close(ctx)
		cancel()
		n.Store.Close()
	})
}

// Resign ends tr's term by hand, as an operator's handover would: the
// record is released and every node that can reach the store may take it
// at once. n campaigns again (Elector.Run).
func (n *Node) Resign(tr *TermRec) {
	n.c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Term.Resign(ctx); err != nil {
		n.c.t.Fatalf("%s resigning term %d: %v", n.ID, tr.Term.Token(), err)
	}
}

// WaitEnded waits until tr's term has ended and returns when n's work saw
// that.
func (n *Node) WaitEnded(tr *TermRec, within time.Duration) time.Time {
	t := n.c.t
	t.Helper()
	select {
	case <-tr.Term.Done():
	case <-time.After(within):
		t.Fatalf("%s's term %d did not end within %v", n.ID, tr.Term.Token(), within)
	}
	for deadline := time.Now().Add(within); ; {
		n.mu.Lock()
		ended := tr.Ended
		n.mu.Unlock()
		if !ended.IsZero() {
			return ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's term %d ended, but its end was not recorded within %v", n.ID, tr.Term.Token(), within)
		}
		time.Sleep(time.Millisecond)
	}
}

// CheckSteppedDown checks that tr ended because its lease ran out, by its
// deadline (plus slack for the timer), is not Valid any more, and that no
// acknowledged write of that term was sent after its deadline.
func (n *Node) CheckSteppedDown(tr *TermRec, ended time.Time) {
	t := n.c.t
	t.Helper()
	if !errors.Is(tr.Term.Err(), baton.ErrLeaseExpired) {
		t.Errorf("%s's term ended with %v, want ErrLeaseExpired", n.ID, tr.Term.Err())
	}
	if tr.Term.Valid() {
		t.Errorf("%s's term is still Valid after it ended", n.ID)
	}
	late := ended.Sub(tr.Term.Deadline())
	t.Logf("%s stepped down %v after its deadline (the deadline was %v after its last successful renewal started)", n.ID, late.Round(time.Millisecond), n.c.Timing.Lease)
	if slack := n.c.Slack(tr.Term.Deadline(), ended); late > slack {
		t.Errorf("%s stepped down %v after its deadline, want within %v (slack %v plus the %v of scheduling delay measured)",
			n.ID, late, slack, n.c.Timing.Slack, slack-n.c.Timing.Slack)
	}
	for _, w := range n.c.Acked() {
		if w.Token == tr.Term.Token() && !w.At.Before(tr.Term.Deadline()) {
			t.Errorf("%s's write with token %d was sent at %v, after its deadline %v, and acknowledged", n.ID, w.Token, w.At, tr.Term.Deadline())
		}
	}
}
