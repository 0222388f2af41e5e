package postgres_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// swapCase is one swap of TestSwapManyOneStatementPath, made for the
// copy of its names under prefix p: setup writes the record it swaps (or
// none), swap builds the swap from what setup wrote.
type swapCase struct {
	what  string
	name  func(p string) string
	setup func(t *testing.T, s store.Store, name, p string) store.Record
	swap  func(cur store.Record, p string) store.Swap
}

// The one-statement path of swap_many (one round, no swap expecting
// version 0) gives every swap the outcome swap_one gives it, and the same
// as swap_many's rounds: the same swaps applied and refused, the same
// records, log events and refusal errors. Each case runs on three copies
// of its names: one batch that takes the one-statement path, one by one
// through Swap, and one batch sent the rounds' way (one more swap, of a
// new name, expects version 0).
func TestSwapManyOneStatementPath(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	ctx := testCtx(t)
	write := func(t *testing.T, sw store.Swap) store.Record {
		t.Helper()
		rec, err := s.Swap(ctx, sw)
		if err != nil {
			t.Fatalf("setup swap of %s: %v", sw.Record.Name, err)
		}
		return rec
	}
	held := func(t *testing.T, _ store.Store, name, p string) store.Record {
		return write(t, store.Swap{Record: acquire(name, p+"n1", 5), Event: store.Acquired})
	}
	plain := func(p string) string { return p + "billing" }
	sessName := func(p string) string { return store.SessionPrefix + p + "n1/i1/1" }
	takeover := func(cur store.Record, p string) store.Swap {
		next := cur
		next.Holder, next.Incarnation, next.Token = p+"n2", p+"n2-1", cur.Token+1
		return store.Swap{Expect: cur.Version, Record: next, Event: store.TakenOver}
	}
	cases := []swapCase{
		{"takeover applies", plain, held, takeover},
		{"wrong version", plain, held, func(cur store.Record, p string) store.Swap {
			sw := takeover(cur, p)
			sw.Expect += 1000
			return sw
		}},
		{"token goes back", plain, held, func(cur store.Record, p string) store.Swap {
			sw := takeover(cur, p)
			sw.Record.Token = cur.Token - 1
			return sw
		}},
		{"same token kept, no event", plain, held, func(cur store.Record, p string) store.Swap {
			next := cur
			next.Lease = 9 * time.Second
			return store.Swap{Expect: cur.Version, Record: next}
		}},
		{"release", plain, held, func(cur store.Record, p string) store.Swap {
			next := cur
			next.Holder, next.Incarnation = "", ""
			return store.Swap{Expect: cur.Version, Record: next, Event: store.Released}
		}},
		{"free record with an incarnation", plain, held, func(cur store.Record, p string) store.Swap {
			next := cur
			next.Holder = ""
			return store.Swap{Expect: cur.Version, Record: next, Event: store.Released}
		}},
		{"held through a session", plain, held, func(cur store.Record, p string) store.Swap {
			sw := takeover(cur, p)
			sw.Record.Session = sessName(p)
			return sw
		}},
		{"session not a session record", plain, held, func(cur store.Record, p string) store.Swap {
			sw := takeover(cur, p)
			sw.Record.Session = p + "billing"
			return sw
		}},
		{"missing record", func(p string) string { return p + "none" },
			func(*testing.T, store.Store, string, string) store.Record { return store.Record{} },
			func(_ store.Record, p string) store.Swap {
				return store.Swap{Expect: 7, Record: acquire(p+"none", p+"n2", 1), Event: store.Acquired}
			}},
		{"dead session held again", sessName, func(t *testing.T, _ store.Store, name, p string) store.Record {
			live := write(t, store.Swap{Record: store.Record{Name: name, Holder: p + "n1", Incarnation: "i1", Lease: time.Second}})
			dead := live
			dead.Holder, dead.Incarnation = "", ""
			return write(t, store.Swap{Expect: live.Version, Record: dead})
		}, func(cur store.Record, p string) store.Swap {
			next := cur
			next.Holder, next.Incarnation = p+"n1", "i1"
			return store.Swap{Expect: cur.Version, Record: next}
		}},
		{"live session renewed", func(p string) string { return store.SessionPrefix + p + "n3/i1/1" },
			func(t *testing.T, _ store.Store, name, p string) store.Record {
				return write(t, store.Swap{Record: store.Record{Name: name, Holder: p + "n3", Incarnation: "i1", Lease: time.Second}})
			}, func(cur store.Record, p string) store.Swap {
				return store.Swap{Expect: cur.Version, Record: cur}
			}},
	}
	type outcome struct {
		applied         bool
		conflict, inval bool
		notFound        bool
		errText         string
		rec             store.Record
		history         []string
		versionAdvanced bool
	}
	run := func(t *testing.T, p string, mode string) []outcome {
		swaps := make([]store.Swap, len(cases))
		before := make([]store.Record, len(cases))
		// Case i's names and holders under p + i.
		pre := func(i int) string { return fmt.Sprintf("%s%d-", p, i) }
		for i, c := range cases {
			before[i] = c.setup(t, s, c.name(pre(i)), pre(i))
			swaps[i] = c.swap(before[i], pre(i))
		}
		var res []store.SwapResult
		switch mode {
		case "one statement":
			var err error
			if res, err = s.SwapMany(ctx, swaps); err != nil {
				t.Fatal(err)
			}
		case "rounds":
			extra := store.Swap{Record: acquire(p+"fresh", p+"n1", 1), Event: store.Acquired}
			all, err := s.SwapMany(ctx, append(append([]store.Swap(nil), swaps...), extra))
			if err != nil {
				t.Fatal(err)
			}
			if all[len(all)-1].Err != nil {
				t.Fatalf("the extra acquisition: %v", all[len(all)-1].Err)
			}
			res = all[:len(swaps)]
		default:
			for _, sw := range swaps {
				rec, err := s.Swap(ctx, sw)
				res = append(res, store.SwapResult{Record: rec, Err: err})
			}
		}
		out := make([]outcome, len(cases))
		for i, r := range res {
			o := outcome{applied: r.Err == nil, conflict: errors.Is(r.Err, store.ErrConflict),
				inval: errors.Is(r.Err, store.ErrInvalid), notFound: errors.Is(r.Err, store.ErrNotFound)}
			if r.Err != nil {
				o.errText = strings.ReplaceAll(r.Err.Error(), p, "P-")
				o.errText = versionRE(o.errText)
			}
			name := cases[i].name(pre(i))
			if cur, err := s.Get(ctx, name); err == nil {
				o.versionAdvanced = cur.Version != before[i].Version
				cur.Version, cur.Updated = 0, time.Time{}
				cur.Name = strings.ReplaceAll(cur.Name, p, "P-")
				cur.Holder = strings.ReplaceAll(cur.Holder, p, "P-")
				cur.Incarnation = strings.ReplaceAll(cur.Incarnation, p, "P-")
				cur.Session = strings.ReplaceAll(cur.Session, p, "P-")
				o.rec = cur
			}
			if r.Err == nil && (r.Record.Holder != swaps[i].Record.Holder || r.Record.Token != swaps[i].Record.Token) {
				t.Errorf("%s, %s: applied, returned %+v for %+v", mode, cases[i].what, r.Record, swaps[i].Record)
			}
			evs, err := s.History(ctx, name, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				o.history = append(o.history, fmt.Sprintf("%d %s %s %d", ev.Seq, ev.Kind, strings.ReplaceAll(ev.Holder, p, "P-"), ev.Token))
			}
			out[i] = o
		}
		return out
	}
	want := run(t, "one-", "one by one")
	for _, mode := range []string{"one statement", "rounds"} {
		got := run(t, strings.ReplaceAll(mode, " ", "")+"-", mode)
		for i, c := range cases {
			if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
				t.Errorf("%s, %s:\n got  %+v\n want %+v (swap_one)", mode, c.what, got[i], want[i])
			}
		}
	}
	applied := 0
	for _, o := range want {
		if o.applied {
			applied++
		}
	}
	if applied == 0 || applied == len(want) {
		t.Fatalf("%d of %d swaps applied: the batch must mix applying and refused swaps", applied, len(want))
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// versionRE blanks the numbers of an error's text: the copies' versions
// differ (their tokens are compared in the records).
func versionRE(s string) string { return digits.ReplaceAllString(s, "N") }

// Two takeover batches of the same records at the same time, in opposite
// orders, one on the one-statement path and one the rounds' way (it also
// acquires a new name): neither deadlocks, each name is taken by exactly
// one of them, and the other's swap is refused against the winner's
// record, as locked.
func TestSwapManyConcurrentTakeovers(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	ctx := testCtx(t)
	const n = 300
	recs := make([]store.Record, n)
	acq := make([]store.Swap, n)
	for i := range acq {
		acq[i] = store.Swap{Record: acquire(fmt.Sprintf("t%03d", i), "n0", 1), Event: store.Acquired}
	}
	res, err := a.SwapMany(ctx, acq)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		recs[i] = r.Record
	}
	for round := range 5 {
		mk := func(node string, rev bool) []store.Swap {
			sw := make([]store.Swap, 0, n+1)
			for i := range recs {
				cur := recs[i]
				if rev {
					cur = recs[n-1-i]
				}
				next := cur
				next.Holder, next.Incarnation, next.Token = node, node+"-1", cur.Token+1
				sw = append(sw, store.Swap{Expect: cur.Version, Record: next, Event: store.TakenOver})
			}
			if rev { // expects version 0: the rounds' way
				sw = append(sw, store.Swap{Record: acquire(fmt.Sprintf("new%d", round), node, 1), Event: store.Acquired})
			}
			return sw
		}
		type result struct {
			node string
			res  []store.SwapResult
			err  error
		}
		done := make(chan result, 2)
		for _, c := range []struct {
			s    store.Store
			node string
			rev  bool
		}{{a, "na", false}, {b, "nb", true}} {
			go func() {
				res, err := c.s.SwapMany(ctx, mk(c.node, c.rev))
				if err == nil && c.rev {
					if res[n].Err != nil {
						err = fmt.Errorf("the acquisition: %w", res[n].Err)
					}
					res = res[:n]
					for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
						res[i], res[j] = res[j], res[i]
					}
				}
				done <- result{c.node, res, err}
			}()
		}
		got := [2]result{<-done, <-done}
		for _, g := range got {
			if g.err != nil {
				t.Fatalf("round %d, %s: %v", round, g.node, g.err)
			}
		}
		for i := range recs {
			var winner *store.SwapResult
			for _, g := range got {
				r := g.res[i]
				switch {
				case r.Err == nil && winner == nil:
					winner = &g.res[i]
				case r.Err == nil:
					t.Fatalf("round %d: %s taken by both batches", round, recs[i].Name)
				case !errors.Is(r.Err, store.ErrConflict):
					t.Fatalf("round %d: %s refused with %v, want ErrConflict", round, recs[i].Name, r.Err)
				}
			}
			if winner == nil {
				t.Fatalf("round %d: %s taken by neither batch", round, recs[i].Name)
			}
			cur, err := a.Get(ctx, recs[i].Name)
			if err != nil || cur.Version != winner.Record.Version || cur.Holder != winner.Record.Holder || cur.Token != recs[i].Token+1 {
				t.Fatalf("round %d: %s is %+v, %v; the winner wrote %+v", round, recs[i].Name, cur, err, winner.Record)
			}
			recs[i] = cur
		}
	}
}

// A swap of a batch whose record another transaction writes and commits
// while the batch waits for its lock is decided against the record as
// locked (the committed one), not as it was when the batch's statement
// began: on the one-statement path as in the rounds.
func TestSwapManyDecidesAgainstLockedRecord(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	for _, path := range []string{"one statement", "rounds"} {
		t.Run(path, func(t *testing.T) {
			p := strings.ReplaceAll(path, " ", "") + "-"
			var recs []store.Record
			for _, n := range []string{"a", "b", "c"} {
				rec, err := s.Swap(ctx, store.Swap{Record: acquire(p+n, "n1", 1), Event: store.Acquired})
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, rec)
			}
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			// Another writer takes b, and holds its lock until commit.
			var newVersion int64
			if err := tx.QueryRow(ctx, `UPDATE baton.election SET holder = 'n9', token = token + 5,
				version = nextval('baton.version_seq'), wxid = pg_current_xact_id()::text::bigint
				WHERE name = $1 RETURNING version`, p+"b").Scan(&newVersion); err != nil {
				t.Fatal(err)
			}
			var swaps []store.Swap
			for _, r := range recs {
				next := r
				next.Holder, next.Incarnation, next.Token = "n2", "n2-1", r.Token+1
				swaps = append(swaps, store.Swap{Expect: r.Version, Record: next, Event: store.TakenOver})
			}
			if path == "rounds" {
				swaps = append(swaps, store.Swap{Record: acquire(p+"new", "n2", 1), Event: store.Acquired})
			}
			type result struct {
				res []store.SwapResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := s.SwapMany(ctx, swaps)
				done <- result{res, err}
			}()
			// Wait until the batch waits for b's lock.
			cc, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close(ctx)
			for waiting := false; !waiting; {
				if err := cc.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE wait_event_type = 'Lock' AND query LIKE '%swap_many%')`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				select {
				case r := <-done:
					t.Fatalf("the batch ended before the other writer committed: %+v, %v", r.res, r.err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			for i, want := range []bool{true, false, true} {
				if got := r.res[i].Err == nil; got != want {
					t.Fatalf("swap of %s: applied %v (%v), want %v", recs[i].Name, got, r.res[i].Err, want)
				}
			}
			if err := r.res[1].Err; !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprint(newVersion)) {
				t.Fatalf("swap of b: %v; want a conflict with the other writer's version %d", err, newVersion)
			}
			if got, err := s.Get(ctx, p+"b"); err != nil || got.Holder != "n9" || got.Version != newVersion {
				t.Fatalf("b after the batch: %+v, %v", got, err)
			}
		})
	}
}
