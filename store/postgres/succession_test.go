package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

func sessionOf(node string) store.Record {
	return store.Record{Name: store.SessionPrefix + node + "/i1/1", Holder: node, Incarnation: "i1", Lease: 3 * time.Second}
}

func must(t *testing.T, s store.Store, sw store.Swap) store.Record {
	t.Helper()
	rec, err := s.Swap(testCtx(t), sw)
	if err != nil {
		t.Fatalf("swap of %s: %v", sw.Record.Name, err)
	}
	return rec
}

// passOnStore makes n1's session hold name at token 5 and n2's session
// live; it returns the name's record and the two sessions.
func passOnStore(t *testing.T, s store.Store, name string) (held, s1, s2 store.Record) {
	t.Helper()
	s1 = must(t, s, store.Swap{Record: sessionOf("n1")})
	s2 = must(t, s, store.Swap{Record: sessionOf("n2")})
	held = must(t, s, store.Swap{Record: store.Record{Name: name, Holder: "n1", Incarnation: "i1", Session: s1.Name, Token: 5, Lease: s1.Lease}, Event: store.Acquired})
	return held, s1, s2
}

// The dead holder's renewal of a name a succession passed on (the
// renewal statement's fast path) conflicts, as does its batch renewal.
func TestRenewalAfterSuccessionConflicts(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	ctx := testCtx(t)
	held, s1, s2 := passOnStore(t, s, "tenant-1")
	must(t, s, store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}})
	if _, err := s.Swap(ctx, store.Swap{Expect: held.Version, Record: held}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the dead holder's renewal after the succession: %v, want ErrConflict", err)
	}
	res, err := s.SwapMany(ctx, []store.Swap{{Expect: held.Version, Record: held}})
	if err != nil || !errors.Is(res[0].Err, store.ErrConflict) {
		t.Fatalf("the dead holder's batch renewal after the succession: %+v, %v; want ErrConflict", res, err)
	}
	if got, err := s.Get(ctx, "tenant-1"); err != nil || got.Holder != "n2" || got.Token != 6 {
		t.Fatalf("after the refused renewals: %+v, %v", got, err)
	}
}

// A batch of takes of names a succession passed on (swap_many's one
// statement path refuses them, the batch is settled and runs again) and
// a batch that writes a session's succession with names: the outcomes of
// swaps one by one.
func TestSwapManyAfterSuccession(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := open(t, pgtest.Start(t))
	defer s.Close()
	ctx := testCtx(t)
	s1 := must(t, s, store.Swap{Record: sessionOf("n1")})
	s2 := must(t, s, store.Swap{Record: sessionOf("n2")})
	s3 := must(t, s, store.Swap{Record: sessionOf("n3")})
	names := []string{"a", "b", "c"}
	for _, n := range names {
		must(t, s, store.Swap{Record: store.Record{Name: n, Holder: "n1", Incarnation: "i1", Session: s1.Name, Token: 5, Lease: s1.Lease}, Event: store.Acquired})
	}
	// The succession, in a batch with a name's take.
	res, err := s.SwapMany(ctx, []store.Swap{
		{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}},
		{Record: store.Record{Name: "d", Holder: "n2", Incarnation: "i1", Session: s2.Name, Token: 1, Lease: s2.Lease}, Event: store.Acquired},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil || res[0].Record.SuccessorHolder != "n2" {
		t.Fatalf("a batch with a succession: %+v, %v", res, err)
	}
	// n3 takes the names from the records it read: at their resolved
	// versions, above the resolved tokens; and one at a stale version.
	var swaps []store.Swap
	for _, n := range names {
		got, err := s.Get(ctx, n)
		if err != nil || got.Holder != "n2" || got.Token != 6 {
			t.Fatalf("Get(%s) = %+v, %v", n, got, err)
		}
		expect := got.Version
		if n == "c" {
			expect = s1.Version // stale
		}
		swaps = append(swaps, store.Swap{Expect: expect, Record: store.Record{Name: n, Holder: "n3", Incarnation: "i1", Session: s3.Name, Token: 7, Lease: s3.Lease}, Event: store.TakenOver})
	}
	res, err = s.SwapMany(ctx, swaps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if names[i] == "c" {
			if !errors.Is(r.Err, store.ErrConflict) {
				t.Fatalf("the take of c at a stale version: %+v, want ErrConflict", r)
			}
			continue
		}
		if r.Err != nil || r.Record.Holder != "n3" || r.Record.Token != 7 {
			t.Fatalf("the take of %s: %+v", names[i], r)
		}
		evs, err := s.History(ctx, names[i], 0, 0)
		if err != nil || len(evs) != 3 || evs[1].Detail != store.SuccessionDetail(s1.Name) || evs[1].Token != 6 || evs[2].Token != 7 || evs[2].Seq != 3 {
			t.Fatalf("History(%s) = %+v, %v", names[i], evs, err)
		}
	}
	// c was settled (its log holds the succession) and not taken.
	if evs, err := s.History(ctx, "c", 0, 0); err != nil || len(evs) != 2 || evs[1].Token != 6 {
		t.Fatalf("History(c) = %+v, %v", evs, err)
	}
	if list, err := s.HeldThrough(ctx, s1.Name, "", 0); err != nil || len(list) != 0 {
		t.Fatalf("HeldThrough(%s) once all were written: %+v, %v", s1.Name, list, err)
	}
}

// A row with a successor that baton never writes (a held session with a
// successor, written by another program once the check is dropped)
// is read as store.ErrCorrupt.
func TestCorruptSuccessor(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	held, s1, s2 := passOnStore(t, s, "tenant-1")
	superExec(t, url, `DROP TRIGGER election_successor_check ON baton.election`)
	superExec(t, url, `UPDATE baton.election SET successor = $1, successor_holder = 'n2' WHERE name = $2`, s2.Name, s1.Name)
	if _, err := s.Get(ctx, held.Name); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Get of a name held through a held session with a successor: %v, want ErrCorrupt", err)
	}
	// A cycle of dead sessions is refused by Resolve.
	superExec(t, url, `UPDATE baton.election SET holder = '', incarnation = '', successor = $1, successor_holder = 'x' WHERE name = $2`, s2.Name, s1.Name)
	superExec(t, url, `UPDATE baton.election SET holder = '', incarnation = '', successor = $1, successor_holder = 'x' WHERE name = $2`, s1.Name, s2.Name)
	if _, err := s.Get(ctx, held.Name); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Get of a name held through a cycle: %v, want ErrInvalid", err)
	}
	if _, _, err := s.CountHolders(ctx, time.Now()); !errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("CountHolders with a name held through a cycle: %v, want ErrInvalid (not unavailable)", err)
	}
}

// TestSuccessionRace races the write of a name held through session S1
// with the write that ends S1 with a successor: the succession draws its
// version first and commits second. Versions come from a sequence, not
// in commit order; without the write's FOR KEY SHARE lock of S1 (see
// succession.go) the name's write lands at a version above the
// succession's, which the resolved record keeps, and a contender that
// read the name between the two commits takes it at that version with
// the token the succession handed to the successor. With the lock the
// write waits for the succession, then settles and conflicts.
func TestSuccessionRace(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	for _, how := range []string{"renewal", "swap", "batch"} {
		t.Run(how, func(t *testing.T) {
			url := pgtest.Start(t)
			s := open(t, url)
			defer s.Close()
			ctx := testCtx(t)
			held, s1, s2 := passOnStore(t, s, "tenant-1")
			s3 := must(t, s, store.Swap{Record: sessionOf("n3")})

			// The succession, as swapInTx writes it: S1 locked FOR
			// UPDATE, its version drawn; not committed yet.
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			watch, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(context.Background())
			var pid int
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM baton.election WHERE name = $1 FOR UPDATE`, s1.Name).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `UPDATE baton.election SET holder = '', incarnation = '', successor = $2,
				successor_holder = $3, successor_incarnation = $4, version = nextval('baton.version_seq'),
				updated = clock_timestamp(), wxid = pg_current_xact_id()::text::bigint WHERE name = $1`,
				s1.Name, s2.Name, s2.Holder, s2.Incarnation); err != nil {
				t.Fatal(err)
			}

			// The name's write by S1's holder, prepared from its read.
			write := held
			if how == "swap" {
				write.Transfer = "n3" // not a renewal: swap_one
			}
			done := make(chan error, 1)
			var wrote store.Record
			go func() {
				var err error
				if how == "batch" {
					var res []store.SwapResult
					if res, err = s.SwapMany(ctx, []store.Swap{{Expect: held.Version, Record: write}}); err == nil {
						wrote, err = res[0].Record, res[0].Err
					}
				} else {
					wrote, err = s.Swap(ctx, store.Swap{Expect: held.Version, Record: write})
				}
				done <- err
			}()
			// Commit the succession once the write waits for a lock
			// (the fix) or has returned (without it).
			var werr error
			finished := false
			for !finished {
				select {
				case werr = <-done:
					finished = true
				case <-time.After(10 * time.Millisecond):
					var waiting int
					if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waiting); err != nil {
						t.Fatal(err)
					}
					if waiting > 0 {
						if err := tx.Commit(ctx); err != nil {
							t.Fatal(err)
						}
						werr, finished = <-done, true
					}
				}
			}
			if err := tx.Commit(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
				t.Fatal(err)
			}
			if werr == nil {
				// The write landed before the succession committed: the
				// succession must change what a reader of it saw.
				take := store.Record{Name: "tenant-1", Holder: "n3", Incarnation: "i1", Session: s3.Name, Token: held.Token + 1, Lease: s3.Lease}
				if got, err := s.Swap(ctx, store.Swap{Expect: wrote.Version, Record: take, Event: store.TakenOver}); err == nil {
					t.Fatalf("%s at version %d landed before the succession committed, and a take from it landed after: %+v, with the token the successor holds", how, wrote.Version, got)
				}
				return
			}
			if !errors.Is(werr, store.ErrConflict) {
				t.Fatalf("the %s racing the succession: %v, want ErrConflict or success", how, werr)
			}
			got, err := s.Get(ctx, "tenant-1")
			if err != nil || got.Holder != "n2" || got.Token != held.Token+1 {
				t.Fatalf("after the race: %+v, %v", got, err)
			}
		})
	}
}
