package election_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// The group property test drives several nodes, each a Group campaigning
// for the same few names, on one memstore. Most nodes hold their names
// through a session; some renew each name's own record (an Elector), so
// that the two kinds of holder contend for the same names. Requests are
// applied and answered at separate moments, in any order among a node's
// requests; nodes freeze, are cut off, crash and restart as new
// incarnations (their requests still landing), resign one name or all of
// them, and an operator asks holders to hand over; some session nodes end
// dead sessions by succession. After every step:
//   - no name has two nodes whose own clocks say they hold a valid term;
//   - each name's election log has strictly increasing tokens and agrees
//     with its record;
//   - no swap is one the store refuses (a dead session held again, a
//     token going back).

var gNames = []string{"a", "b", "c"}

type gnode struct {
	id       string
	inc      int
	rate     float64
	sessions bool
	balance  bool // Config.Balance
	share    int  // Config.Share
	// succession: Config.Succession (unbalanced session nodes).
	succession bool
	hold       bool // campaign again for a name once its term is released, as Group.Hold
	g          *election.Group
	reqs       []election.Action // sent, not yet applied
	replies    []election.Event  // applied, not yet delivered
	cut        bool
	paused     bool
}

type gworld struct {
	t     *rapid.T
	st    *memstore.Store
	now   time.Time
	epoch time.Time
	nodes []*gnode
	names []string // the names checked (nil: gNames)
}

func (w *gworld) checked() []string {
	if w.names != nil {
		return w.names
	}
	return gNames
}

func (w *gworld) local(n *gnode) time.Time {
	return w.epoch.Add(time.Duration(float64(w.now.Sub(w.epoch)) * n.rate))
}

func (w *gworld) restart(n *gnode) {
	n.inc++
	n.g = election.NewGroup(election.Config{
		Node: n.id, Incarnation: fmt.Sprintf("%s.%d", n.id, n.inc),
		Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll, Balance: n.balance,
		Share: n.share, Succession: n.succession,
	}, n.sessions)
	n.replies = nil
}

func (w *gworld) step(n *gnode, ev election.Event) {
	for _, a := range n.g.Step(w.local(n), ev) {
		switch a := a.(type) {
		case election.Get, election.Swap, election.List:
			n.reqs = append(n.reqs, a)
		case election.Released:
			if n.hold && a.Err == nil {
				w.step(n, election.Start{Name: a.Name})
			}
		}
	}
}

// apply executes n's i-th request against the store; its reply waits.
func (w *gworld) apply(n *gnode, i int, deliver bool) {
	ctx := context.Background()
	req := n.reqs[i]
	n.reqs = append(n.reqs[:i:i], n.reqs[i+1:]...)
	var err error
	if n.cut {
		err = store.ErrUnavailable
	}
	var reply election.Event
	switch a := req.(type) {
	case election.Get:
		r := election.GetReply{Name: a.Name, Err: err}
		if err == nil {
			r.Record, r.Err = w.st.Get(ctx, a.Name)
		}
		reply = r
	case election.Swap:
		r := election.SwapReply{Name: a.Swap.Record.Name, Err: err}
		if err == nil {
			r.Record, r.Err = w.st.Swap(ctx, a.Swap)
			if errors.Is(r.Err, store.ErrInvalid) {
				w.t.Fatalf("%s sent a swap the store refuses: %v", n.id, r.Err)
			}
		}
		reply = r
	case election.List:
		r := election.ListReply{Session: a.Session, Err: err}
		if err == nil {
			r.Records, r.Err = w.st.HeldThrough(ctx, a.Session, a.After, election.ListPage)
		}
		reply = r
	}
	if deliver {
		n.replies = append(n.replies, reply)
	}
}

func (w *gworld) progress(n *gnode) {
	if n.paused {
		return
	}
	for len(n.reqs) > 0 {
		w.apply(n, 0, true)
	}
	for len(n.replies) > 0 {
		r := n.replies[0]
		n.replies = n.replies[1:]
		w.step(n, r)
	}
	if next := n.g.Next(); !next.IsZero() && !w.local(n).Before(next) {
		w.step(n, election.Tick{})
	}
}

func (w *gworld) check() {
	ctx := context.Background()
	for _, name := range w.checked() {
		var who []string
		for _, n := range w.nodes {
			m := n.g.Machine(name)
			if m != nil && m.Leading() && w.local(n).Before(m.Deadline()) {
				who = append(who, fmt.Sprintf("%s(token %d)", n.id, m.Token()))
			}
		}
		if len(who) > 1 {
			w.t.Fatalf("at %v %q has two valid holders: %v", w.now.Sub(w.epoch), name, who)
		}
		evs, err := w.st.History(ctx, name, 0, 0)
		if err != nil {
			w.t.Fatal(err)
		}
		var last uint64
		for _, ev := range evs {
			acquired := ev.Holder != "" && (ev.Kind == store.Acquired || ev.Kind == store.TakenOver || ev.Kind == store.Transferred)
			if acquired && ev.Token <= last || !acquired && ev.Token != last {
				w.t.Fatalf("log tokens of %q do not increase: %+v", name, evs)
			}
			last = ev.Token
		}
		rec, err := w.st.Get(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if e := evs[len(evs)-1]; e.Holder != rec.Holder || e.Token != rec.Token || e.Incarnation != rec.Incarnation {
			w.t.Fatalf("last event %+v of %q disagrees with record %+v", e, name, rec)
		}
	}
}

func TestGroupProperties(t *testing.T) { rapid.Check(t, groupProperty) }

// groupProperty is one draw of TestGroupProperties (and FuzzGroup).
func groupProperty(t *rapid.T) {
	{
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		w := &gworld{t: t, epoch: epoch, now: epoch}
		w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
		n := rapid.IntRange(2, 4).Draw(t, "nodes")
		d := float64(pMargin) / float64(pLease) / 2
		for i := 0; i < n; i++ {
			nd := &gnode{
				id:       fmt.Sprintf("n%d", i),
				rate:     rapid.SampledFrom([]float64{1, 1 - d, 1 + d}).Draw(t, "rate"),
				sessions: i == 0 || rapid.IntRange(0, 3).Draw(t, "inline") != 0,
			}
			nd.balance = nd.sessions && rapid.Bool().Draw(t, "balance")
			nd.succession = nd.sessions && !nd.balance && rapid.Bool().Draw(t, "succession")
			w.restart(nd)
			w.nodes = append(w.nodes, nd)
			for _, name := range gNames {
				w.step(nd, election.Start{Name: name})
			}
		}
		steps := rapid.IntRange(100, 500).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			nd := w.nodes[rapid.IntRange(0, n-1).Draw(t, "node")]
			name := rapid.SampledFrom(gNames).Draw(t, "name")
			switch rapid.IntRange(0, 14).Draw(t, "op") {
			default: // time passes; every running node does what is due
				w.now = w.now.Add(rapid.SampledFrom(ticks).Draw(t, "dt"))
				for _, x := range w.nodes {
					w.progress(x)
				}
			case 6:
				nd.paused = !nd.paused
			case 7:
				nd.cut = !nd.cut
			case 8: // one request lands out of order; its reply waits or is lost
				if len(nd.reqs) > 0 {
					w.apply(nd, rapid.IntRange(0, len(nd.reqs)-1).Draw(t, "req"), rapid.IntRange(0, 4).Draw(t, "lost") != 0)
				}
			case 9: // crash and restart; requests in flight may still land
				for len(nd.reqs) > 0 {
					if rapid.Bool().Draw(t, "lands") {
						w.apply(nd, 0, false)
					} else {
						nd.reqs = nd.reqs[1:]
					}
				}
				w.restart(nd)
				nd.paused = false
				for _, name := range gNames {
					w.step(nd, election.Start{Name: name})
				}
			case 10: // resign one name, or campaign for it again
				if nd.paused {
					break
				}
				if m := nd.g.Machine(name); m != nil && m.Leading() {
					w.step(nd, election.Resign{Name: name, Token: m.Token()})
				} else {
					w.step(nd, election.Start{Name: name})
				}
			case 11: // resign everything, then campaign again later
				if !nd.paused {
					w.step(nd, election.Resign{})
				}
			case 12: // an operator asks the holder of name to hand over
				rec, err := w.st.Get(context.Background(), name)
				if err == nil && !rec.Free() && rec.Transfer == "" {
					rec.Transfer = store.AnyNode
					w.st.Swap(context.Background(), store.Swap{Expect: rec.Version, Record: rec, Event: store.TransferRequested})
				}
			case 13: // a change notification, true or not, of some version
				if !nd.paused {
					var v int64
					switch rapid.IntRange(0, 2).Draw(t, "notified version") {
					case 1: // the record's
						if rec, err := w.st.Get(context.Background(), name); err == nil {
							v = rec.Version
						}
					case 2: // any
						v = rapid.Int64Range(1, 200).Draw(t, "any version")
					}
					w.step(nd, election.Changed{Name: name, Version: v})
				}
			}
			w.check()
		}
	}
}

// deadSessionWorld returns a world at its epoch in which a crashed process
// held every name through its session, dead: that session's record.
func deadSessionWorld(t *rapid.T) (w *gworld, epoch time.Time, dead store.Record) {
	epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w = &gworld{t: t, epoch: epoch, now: epoch}
	w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
	ctx := context.Background()
	dead, err := w.st.Swap(ctx, store.Swap{Record: store.Record{Name: election.SessionName("gone", "x", 1), Holder: "gone", Incarnation: "x", Lease: pLease}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range gNames {
		rec := store.Record{Name: name, Holder: "gone", Incarnation: "x", Session: dead.Name, Token: 5, Lease: pLease}
		if _, err := w.st.Swap(ctx, store.Swap{Record: rec, Event: store.Acquired}); err != nil {
			t.Fatal(err)
		}
	}
	return w, epoch, dead
}

// In a healthy cluster every name is held within lease + 2e + a few polls
// of the start, whatever dead sessions hold them at first: an observer
// ends each dead session once, and its names follow.
func TestGroupTakesOverDeadSessions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, epoch, _ := deadSessionWorld(t)
		ctx := context.Background()
		n := rapid.IntRange(1, 3).Draw(t, "nodes")
		for i := 0; i < n; i++ {
			nd := &gnode{id: fmt.Sprintf("n%d", i), rate: 1, sessions: rapid.Bool().Draw(t, "sessions")}
			w.restart(nd)
			w.nodes = append(w.nodes, nd)
			for _, name := range gNames {
				w.step(nd, election.Start{Name: name})
			}
		}
		bound := epoch.Add(pLease + 2*pMargin + 3*pPoll)
		for w.now.Before(bound) {
			for _, nd := range w.nodes {
				for len(nd.reqs) > 0 || len(nd.replies) > 0 {
					w.progress(nd)
				}
				w.progress(nd)
			}
			w.check()
			w.now = w.now.Add(10 * time.Millisecond)
		}
		for _, name := range gNames {
			held := 0
			for _, nd := range w.nodes {
				if m := nd.g.Machine(name); m.Leading() {
					held++
				}
			}
			rec, _ := w.st.Get(ctx, name)
			if held != 1 || rec.Token != 6 {
				t.Fatalf("%q: %d holders, record %+v, %v after start", name, held, rec, bound.Sub(epoch))
			}
		}
	})
}

// Change notifications of a dead session record, arriving while every
// read of it is out (forged ones, say: on PostgreSQL any connected
// client may send one), do not hold its end off: the observer re-reads
// for a change its read may predate only while the session's wait has not
// run out, and the write that ends it compares with the version seen, so
// a real renewal the read missed still makes it conflict.
func TestNotificationsDoNotHoldOffDeadSessions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w, epoch, dead := deadSessionWorld(t)
		ctx := context.Background()
		forged := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(dead.Version+1, math.MaxInt64)).Draw(t, "notified version")
		nd := &gnode{id: "n1", rate: 1, sessions: true}
		w.restart(nd)
		w.nodes = []*gnode{nd}
		for _, name := range gNames {
			w.step(nd, election.Start{Name: name})
		}
		// One round a step: the requests land, a notification comes, the
		// replies arrive.
		bound := epoch.Add(pLease + 2*pMargin + 3*pPoll)
		for ; w.now.Before(bound); w.now = w.now.Add(10 * time.Millisecond) {
			for len(nd.reqs) > 0 {
				w.apply(nd, 0, true)
			}
			w.step(nd, election.Changed{Name: dead.Name, Version: forged})
			for len(nd.replies) > 0 {
				r := nd.replies[0]
				nd.replies = nd.replies[1:]
				w.step(nd, r)
			}
			if next := nd.g.Next(); !next.IsZero() && !w.local(nd).Before(next) {
				w.step(nd, election.Tick{})
			}
			w.check()
		}
		for _, name := range gNames {
			if m := nd.g.Machine(name); !m.Leading() {
				rec, _ := w.st.Get(ctx, name)
				t.Fatalf("%q not held %v after start, with a notification of %s each round: record %+v", name, bound.Sub(epoch), dead.Name, rec)
			}
		}
	})
}

// A change notification of the version a holder knows needs no read; one
// of another version does, and one that comes while a read is in flight
// gets a read of its own after it, since the read in flight may predate
// the change. Here that second read finds an operator's transfer request.
func TestChangedVersions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	st := memstore.New(memstore.WithTime(func() time.Time { return now }))
	g := election.NewGroup(election.Config{Node: "n1", Incarnation: "i1", Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll}, true)
	var reqs []election.Action
	step := func(ev election.Event) {
		for _, a := range g.Step(now, ev) {
			switch a.(type) {
			case election.Get, election.Swap:
				reqs = append(reqs, a)
			}
		}
	}
	apply := func(a election.Action) election.Event {
		switch a := a.(type) {
		case election.Get:
			rec, err := st.Get(ctx, a.Name)
			return election.GetReply{Name: a.Name, Record: rec, Err: err}
		case election.Swap:
			rec, err := st.Swap(ctx, a.Swap)
			return election.SwapReply{Name: a.Swap.Record.Name, Record: rec, Err: err}
		}
		t.Fatalf("not a request: %T", a)
		return nil
	}
	settle := func() {
		for len(reqs) > 0 {
			a := reqs[0]
			reqs = reqs[1:]
			step(apply(a))
		}
	}
	step(election.Start{Name: "a"})
	settle()
	if !g.Machine("a").Leading() {
		t.Fatal("the group does not hold a")
	}
	held, err := st.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}

	step(election.Changed{Name: "a", Version: held.Version})
	if len(reqs) != 0 {
		t.Fatalf("a notification of the version held sent %v, want nothing", reqs)
	}
	step(election.Changed{Name: "a"})
	if len(reqs) != 1 {
		t.Fatalf("a notification of no version sent %v, want one read", reqs)
	}
	stale := reqs[0]
	reqs = nil
	// The operator asks for a transfer while that read is in flight; the
	// read was answered before the write.
	staleReply := apply(stale)
	asked := held
	asked.Transfer = "n2"
	if _, err := st.Swap(ctx, store.Swap{Expect: held.Version, Record: asked, Event: store.TransferRequested}); err != nil {
		t.Fatal(err)
	}
	cur, _ := st.Get(ctx, "a")
	step(election.Changed{Name: "a", Version: cur.Version})
	if len(reqs) != 0 {
		t.Fatalf("a notification during a read sent %v at once, want nothing yet", reqs)
	}
	step(staleReply)
	if len(reqs) != 1 {
		t.Fatalf("after the read in flight the notified change got %v, want one read", reqs)
	}
	settle()
	if g.Machine("a").Leading() {
		t.Fatal("the holder still leads after reading the transfer request")
	}
}

// A contender whose name moves from one live session to another stops
// waiting on the first: once the group stops campaigning, it is idle, and
// no observer of either session polls on (Group.Close would wait for ever).
func TestGroupForgetsSessionsANameLeft(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("observer read out %v", late), func(t *testing.T) { forgetSessions(t, late) })
	}
}

func forgetSessions(t *testing.T, late bool) {
	ctx := context.Background()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &gworld{epoch: epoch, now: epoch}
	w.st = memstore.New(memstore.WithTime(func() time.Time { return w.now }))
	hold := func(node string) string {
		s := election.SessionName(node, node+".1", 1)
		if _, err := w.st.Swap(ctx, store.Swap{Record: store.Record{Name: s, Holder: node, Incarnation: node + ".1", Lease: pLease}}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	sa, sc := hold("a"), hold("c")
	rec, err := w.st.Swap(ctx, store.Swap{Record: store.Record{Name: "x", Holder: "a", Incarnation: "a.1", Session: sa, Token: 1, Lease: pLease}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	g := election.NewGroup(election.Config{Node: "b", Incarnation: "b.1", Lease: pLease, Renew: pRenew, Margin: pMargin, Poll: pPoll, Retry: pPoll}, true)
	var out []election.Action
	idle := false
	step := func(ev election.Event) {
		for _, a := range g.Step(w.now, ev) {
			switch a := a.(type) {
			case election.Get, election.Swap:
				out = append(out, a)
			case election.Idle:
				idle = true
			}
		}
	}
	drain := func() {
		for len(out) > 0 {
			a := out[0]
			out = out[1:]
			switch a := a.(type) {
			case election.Get:
				r := election.GetReply{Name: a.Name}
				r.Record, r.Err = w.st.Get(ctx, a.Name)
				step(r)
			case election.Swap:
				r := election.SwapReply{Name: a.Swap.Record.Name}
				r.Record, r.Err = w.st.Swap(ctx, a.Swap)
				step(r)
			}
		}
	}
	step(election.Start{Name: "x"})
	drain()
	// x moves from a's session to c's (a handover), and b reads it.
	rec.Holder, rec.Incarnation, rec.Session, rec.Token = "c", "c.1", sc, 2
	if _, err := w.st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec, Event: store.Transferred}); err != nil {
		t.Fatal(err)
	}
	step(election.Changed{Name: "x"})
	if late {
		// The read of x is answered and the group starts reading c's
		// session; the campaign stops before that read is answered.
		a := out[0].(election.Get)
		out = out[1:]
		r := election.GetReply{Name: a.Name}
		r.Record, r.Err = w.st.Get(ctx, a.Name)
		step(r)
		idle = false
		step(election.Resign{})
	} else {
		drain()
		idle = false
		step(election.Resign{})
	}
	renew := func(s string) { // a and c stay alive
		r, err := w.st.Get(ctx, s)
		if err == nil {
			_, err = w.st.Swap(ctx, store.Swap{Expect: r.Version, Record: r})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 40 && !idle; i++ {
		drain()
		renew(sa)
		renew(sc)
		w.now = w.now.Add(pPoll)
		step(election.Tick{})
	}
	drain()
	if !idle || !g.Next().IsZero() {
		t.Fatalf("the group stopped campaigning but is not idle (next timer %v)", g.Next())
	}
}
