package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// The property test drives several machines on one memstore through random
// interleavings: store requests are applied and answered at separate
// moments (so replies are late and out of order), nodes crash and restart
// as new incarnations with their last request possibly still landing, are
// cut off from the store, resign, and clocks run at different rates within
// the margin. After every step it checks:
//   - at most one node holds a term that its own clock says is valid;
//   - tokens in the election log strictly increase;
//   - the log agrees with the record (holder and token of the last event).

const (
	pLease  = 3 * time.Second
	pRenew  = time.Second
	pMargin = 150 * time.Millisecond
	pPoll   = 200 * time.Millisecond
)

// ticks are the amounts of time one step lets pass. rapid leans towards
// small draws, so they are sampled from a list that has no zero.
var ticks = []time.Duration{100 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second}

type pnode struct {
	id      string
	inc     int
	rate    float64 // local clock rate
	m       *election.Machine
	req     election.Action // sent, not yet applied
	reply   election.Event  // applied, not yet delivered
	cut     bool
	paused  bool
	elected uint64 // token of the term the machine announced
}

type world struct {
	t     *rapid.T
	st    *memstore.Store
	now   time.Time // global real time
	epoch time.Time
	nodes []*pnode
}

func (w *world) local(n *pnode) time.Time {
	return w.epoch.Add(time.Duration(float64(w.now.Sub(w.epoch)) * n.rate))
}

func (w *world) newMachine(n *pnode) {
	n.inc++
	n.m = election.New(election.Config{
		Name: "job", Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll,
	})
	n.req, n.reply, n.elected = nil, nil, 0
}

func (w *world) step(n *pnode, ev election.Event) {
	for _, a := range n.m.Step(w.local(n), ev) {
		switch a := a.(type) {
		case election.Get, election.Swap:
			if n.req != nil || n.reply != nil {
				w.t.Fatalf("%s: a second request while one is in flight", n.id)
			}
			n.req = a
		case election.Elected:
			n.elected = a.Token
		case election.Lost:
			n.elected = 0
		}
	}
}

// apply executes n's request against the store; the reply waits.
func (w *world) apply(n *pnode) {
	ctx := context.Background()
	var err error
	if n.cut {
		err = store.ErrUnavailable
	}
	switch a := n.req.(type) {
	case election.Get:
		if err != nil {
			n.reply = election.GetReply{Err: err}
		} else {
			rec, err := w.st.Get(ctx, a.Name)
			n.reply = election.GetReply{Record: rec, Err: err}
		}
	case election.Swap:
		if err != nil {
			n.reply = election.SwapReply{Err: err}
		} else {
			rec, err := w.st.Swap(ctx, a.Swap)
			n.reply = election.SwapReply{Record: rec, Err: err}
		}
	}
	n.req = nil
}

func (w *world) check() {
	valid := 0
	var who []string
	for _, n := range w.nodes {
		if n.m.Leading() && w.local(n).Before(n.m.Deadline()) {
			valid++
			who = append(who, fmt.Sprintf("%s(token %d)", n.id, n.m.Token()))
		}
	}
	if valid > 1 {
		w.t.Fatalf("at %v two valid leaders: %v", w.now.Sub(w.epoch), who)
	}
	evs, err := w.st.History(context.Background(), "job", 0, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	var last uint64
	for _, ev := range evs {
		if ev.Kind != store.Released && ev.Kind != store.TransferRequested && ev.Token <= last {
			w.t.Fatalf("log tokens do not increase: %+v", evs)
		}
		last = ev.Token
	}
	rec, err := w.st.Get(context.Background(), "job")
	if errors.Is(err, store.ErrNotFound) {
		if len(evs) != 0 {
			w.t.Fatal("log without a record")
		}
		return
	}
	if len(evs) == 0 {
		w.t.Fatalf("record %+v without a log", rec)
	}
	if e := evs[len(evs)-1]; e.Holder != rec.Holder || e.Token != rec.Token || e.Incarnation != rec.Incarnation {
		w.t.Fatalf("last event %+v disagrees with record %+v", e, rec)
	}
}

func TestProtocolProperties(t *testing.T) { rapid.Check(t, protocolProperty) }

// protocolProperty is one random interleaving, checked after every step
// (TestProtocolProperties, and FuzzProtocol from fuzz bytes).
func protocolProperty(t *rapid.T) {
	{
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		w := &world{t: t, epoch: epoch, now: epoch}
		w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
		n := rapid.IntRange(2, 5).Draw(t, "nodes")
		// Rates within the margin: (1+d)/(1-d) <= 1 + 2*margin/lease.
		d := float64(pMargin) / float64(pLease) / 2
		for i := 0; i < n; i++ {
			nd := &pnode{id: fmt.Sprintf("n%d", i), rate: rapid.SampledFrom([]float64{1, 1 - d, 1 + d}).Draw(t, "rate")}
			w.newMachine(nd)
			w.nodes = append(w.nodes, nd)
			w.step(nd, election.Start{})
		}
		steps := rapid.IntRange(100, 600).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			nd := w.nodes[rapid.IntRange(0, n-1).Draw(t, "node")]
			switch rapid.IntRange(0, 11).Draw(t, "op") {
			default: // time passes; every node that is not paused makes progress
				w.now = w.now.Add(rapid.SampledFrom(ticks).Draw(t, "dt"))
				for _, x := range w.nodes {
					w.progress(x)
				}
			case 6: // frozen (GC, SIGSTOP) or resumed; its requests may still land
				nd.paused = !nd.paused
			case 7: // cut off from the store or reconnected
				nd.cut = !nd.cut
			case 8: // a slow store: this node's request lands, its reply waits
				if nd.req != nil {
					w.apply(nd)
				}
			case 9: // crash and restart; the request in flight may still land
				pending := nd.req
				w.newMachine(nd)
				nd.paused = false
				if pending != nil && rapid.Bool().Draw(t, "lands") {
					nd.req = pending
					w.apply(nd)
					nd.reply = nil
				}
				w.step(nd, election.Start{})
			case 10: // resign, or campaign again when idle
				if nd.paused {
					break
				}
				if nd.m.Leading() {
					w.step(nd, election.Resign{Token: nd.m.Token()})
				} else {
					w.step(nd, election.Start{})
				}
			}
			w.check()
		}
	}
}

// progress lets a running node do what is due: its request reaches the
// store, the reply comes back, a due timer fires.
func (w *world) progress(n *pnode) {
	if n.paused {
		return
	}
	if n.req != nil {
		w.apply(n)
	}
	if n.reply != nil {
		r := n.reply
		n.reply = nil
		w.step(n, r)
	}
	if next := n.m.Next(); !next.IsZero() && !w.local(n).Before(next) {
		w.step(n, election.Tick{})
	}
}

// Liveness in a healthy cluster: when every request is served at once and
// timers fire on time, some node leads within lease + 2e + poll of any
// moment, whatever the starting state.
func TestLeaderEmergesInHealthyCluster(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		w := &world{t: t, epoch: epoch, now: epoch}
		w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
		// A stale record from a dead holder.
		if rapid.Bool().Draw(t, "stale") {
			w.st.Swap(context.Background(), store.Swap{Record: store.Record{Name: "job", Holder: "dead", Incarnation: "x", Token: 7, Lease: pLease}, Event: store.Acquired})
		}
		n := rapid.IntRange(1, 4).Draw(t, "nodes")
		for i := 0; i < n; i++ {
			nd := &pnode{id: fmt.Sprintf("n%d", i), rate: 1}
			w.newMachine(nd)
			w.nodes = append(w.nodes, nd)
			w.step(nd, election.Start{})
		}
		bound := epoch.Add(pLease + 2*pMargin + pPoll)
		for w.now.Before(bound.Add(time.Millisecond)) {
			for _, nd := range w.nodes {
				for nd.req != nil {
					w.progress(nd)
				}
				w.progress(nd)
			}
			w.check()
			w.now = w.now.Add(10 * time.Millisecond)
		}
		leaders := 0
		for _, nd := range w.nodes {
			if nd.m.Leading() {
				leaders++
			}
		}
		if leaders != 1 {
			t.Fatalf("%d leaders %v after start", leaders, bound.Sub(epoch))
		}
	})
}
