package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// groupOnStore runs a Group's store actions on an in-memory store at once,
// on virtual time, and keeps what it announced.
type groupOnStore struct {
	t    *testing.T
	g    *election.Group
	st   *memstore.Store
	now  time.Time
	seen []election.Action
}

func (x *groupOnStore) step(ev election.Event) {
	x.t.Helper()
	queue := []election.Event{ev}
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		for _, a := range x.g.Step(x.now, ev) {
			x.seen = append(x.seen, a)
			switch a := a.(type) {
			case election.Get:
				rec, err := x.st.Get(context.Background(), a.Name)
				queue = append(queue, election.GetReply{Name: a.Name, Record: rec, Err: err})
			case election.Swap:
				rec, err := x.st.Swap(context.Background(), a.Swap)
				queue = append(queue, election.SwapReply{Name: a.Swap.Record.Name, Record: rec, Err: err})
			}
		}
	}
}

// run steps the group's timers until d has passed.
func (x *groupOnStore) run(d time.Duration) {
	end := x.now.Add(d)
	for next := x.g.Next(); !next.IsZero() && !next.After(end); next = x.g.Next() {
		x.now = next
		x.step(election.Tick{})
	}
	x.now = end
}

// A Group holding the job through its session hands it over like an
// Elector: at a safe point once the hysteresis is over, with the
// existing transfer (the free record names the target, token kept, the
// transferred event), and the session record is never handed over.
func TestGroupHandsOverThroughSession(t *testing.T) {
	cfg := election.Config{Node: "a", Incarnation: "a.1", Lease: 3 * time.Second, Renew: time.Second,
		Margin: 100 * time.Millisecond, Poll: 250 * time.Millisecond, Retry: 250 * time.Millisecond,
		Check: 3 * time.Second, Prefer: election.Policy{Kind: election.PreferNewestVersion}, Hysteresis: 5 * time.Second,
		Self: election.Attrs{Version: "1.9"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	x := &groupOnStore{t: t, g: election.NewGroup(cfg, true), st: memstore.New(), now: time.Unix(1000, 0)}
	x.step(election.Start{Name: "job", Hold: true})
	x.run(time.Second)
	rec, err := x.st.Get(context.Background(), "job")
	if err != nil || rec.Holder != "a" || rec.Session == "" {
		t.Fatalf("not held through a session: %+v, %v", rec, err)
	}
	newer := election.Candidates{Name: "job", List: []election.Candidate{{Node: "b", Attrs: election.Attrs{Version: "1.10"}}}}
	x.step(election.SafePoint{Name: "job", Safe: true})
	x.step(newer)
	if r, _ := x.st.Get(context.Background(), "job"); r.Holder != "a" {
		t.Fatalf("handed over within the hysteresis: %+v", r)
	}
	// The session's name is not a name of the group: ignored.
	sess, _ := x.g.Session()
	x.step(election.Candidates{Name: sess, List: newer.List})
	x.run(5 * time.Second)
	x.seen = nil
	x.step(newer)
	r, err := x.st.Get(context.Background(), "job")
	if err != nil || !r.Free() || r.Transfer != "b" || r.Token != rec.Token {
		t.Fatalf("after the hysteresis: %+v, %v; want free towards b at token %d", r, err, rec.Token)
	}
	var lost bool
	for _, a := range x.seen {
		if l, ok := a.(election.Lost); ok && l.Name == "job" && errors.Is(l.Cause, election.ErrHandedOver) {
			lost = true
		}
	}
	if !lost {
		t.Fatalf("no Lost(ErrHandedOver): %v", x.seen)
	}
	if s, err := x.st.Get(context.Background(), sess); err != nil || s.Free() {
		t.Fatalf("the session was given up with the name: %+v, %v", s, err)
	}
	log, err := x.st.History(context.Background(), "job", 0, 0)
	if err != nil || len(log) == 0 || log[len(log)-1].Kind != store.Transferred || log[len(log)-1].Transfer != "b" {
		t.Fatalf("election log %+v, %v; want a transferred event towards b last", log, err)
	}
}
