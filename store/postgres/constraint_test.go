package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// A write refused by a constraint baton did not make (another program
// added it to baton's tables) will not heal: it is store.ErrCorrupt, a
// permanent error, for a swap and for a ledger write, and nothing is
// written.
func TestForeignConstraintPermanent(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	superExec(t, url, `ALTER TABLE baton.election ADD CONSTRAINT small_tokens CHECK (token < 2);
		ALTER TABLE baton.runs ADD CONSTRAINT no_failures CHECK (state <> 'failed')`)
	_, err = s.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: "a", Holder: "n2", Incarnation: "i2", Token: 2}, Event: store.TakenOver})
	if !store.Permanent(err) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "constraint") {
		t.Fatalf("a swap a foreign constraint refuses: %v, want a permanent ErrCorrupt naming the constraint", err)
	}
	_, err = s.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "a", Period: "2026-01-01T00:00:00Z", State: store.Failed, Token: 1, Holder: "n1"}})
	if !store.Permanent(err) || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("a run write a foreign constraint refuses: %v, want a permanent ErrCorrupt", err)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got.Version != rec.Version {
		t.Fatalf("after the refused swap: %+v, %v; want %+v", got, err, rec)
	}
}

// TestElectionChecks: a row that breaks a rule of the election table
// (schema.go's checkTriggers) is refused with check_violation, naming the
// rule, whichever of the rule's columns the write sets, and nothing is
// written; baton's own writes (a renewal, a succession) pass.
func TestElectionChecks(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	url := pgtest.Start(t)
	s := open(t, url)
	defer s.Close()
	ctx := testCtx(t)
	held, s1, s2 := passOnStore(t, s, "tenant-1")
	if _, err := s.Swap(ctx, store.Swap{Expect: s2.Version, Record: s2}); err != nil {
		t.Fatalf("a session's renewal: %v", err)
	}
	dead := must(t, s, store.Swap{Expect: s1.Version, Record: store.Record{Name: s1.Name, Lease: s1.Lease, Successor: s2.Name}})
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows := func() string {
		var dump string
		if err := c.QueryRow(ctx, `SELECT string_agg(e::text, ';' ORDER BY name) FROM baton.election e`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		return dump
	}
	before := rows()
	for _, tc := range []struct{ rule, sql, name string }{
		{"election_token_check", `UPDATE baton.election SET token = -1 WHERE name = $1`, held.Name},
		{"election_token_check", `INSERT INTO baton.election (name, holder, incarnation, token, lease_ns, transfer, version, updated)
			VALUES ($1 || '-new', 'n1', 'i1', -1, 1, '', 1, now())`, held.Name},
		// A successor on a held record, on a name that is not a session's,
		// naming itself or a name that is not a session's, without its holder.
		{"election_successor_check", `UPDATE baton.election SET successor = 'session/x', successor_holder = 'n9' WHERE name = $1`, s2.Name},
		{"election_successor_check", `UPDATE baton.election SET holder = 'n9' WHERE name = $1`, dead.Name},
		{"election_successor_check", `UPDATE baton.election SET name = 'tenant-x' WHERE name = $1`, dead.Name},
		{"election_successor_check", `UPDATE baton.election SET successor = name WHERE name = $1`, dead.Name},
		{"election_successor_check", `UPDATE baton.election SET successor = 'tenant-1' WHERE name = $1`, dead.Name},
		{"election_successor_check", `UPDATE baton.election SET successor_holder = '' WHERE name = $1`, dead.Name},
		// A successor's holder or incarnation without a successor.
		{"election_successor_holder_check", `UPDATE baton.election SET successor_holder = 'n9' WHERE name = $1`, held.Name},
		{"election_successor_holder_check", `UPDATE baton.election SET successor_incarnation = 'i9' WHERE name = $1`, held.Name},
		{"election_successor_holder_check", `UPDATE baton.election SET successor = '' WHERE name = $1`, dead.Name},
	} {
		_, err := c.Exec(ctx, tc.sql, tc.name)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != tc.rule || !strings.Contains(pgErr.Message, tc.rule) {
			t.Errorf("%s: %v, want check_violation of %s", tc.sql, err, tc.rule)
		}
		if after := rows(); after != before {
			t.Fatalf("%s was refused but wrote: %s, was %s", tc.sql, after, before)
		}
	}
	// Store.fail reports it as ErrCorrupt: a rule broken by a foreign
	// write reaches baton through the record functions as it did through
	// CHECK constraints.
	superExec(t, url, `CREATE FUNCTION baton.negative() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN NEW.token := -1; RETURN NEW; END $$;
		CREATE TRIGGER negative BEFORE UPDATE ON baton.election FOR EACH ROW EXECUTE FUNCTION baton.negative()`)
	cur, err := s.Get(ctx, "tenant-1")
	if err != nil {
		t.Fatal(err)
	}
	next := cur
	next.Holder, next.Incarnation, next.Session, next.Token = "n3", "i3", "", cur.Token+1
	if _, err := s.Swap(ctx, store.Swap{Expect: cur.Version, Record: next, Event: store.TakenOver}); !store.Permanent(err) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "election_token_check") {
		t.Fatalf("a take a foreign trigger turns into a negative token: %v, want a permanent ErrCorrupt naming election_token_check", err)
	}
}
