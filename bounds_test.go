package baton_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// A lease past MaxLease, alone or with a margin whose sum would once have
// wrapped, is refused with an error that names the maximum.
func TestLeaseAboveTheMaximumIsRefused(t *testing.T) {
	for _, opts := range [][]baton.Option{
		{baton.WithLease(2000000 * time.Hour), baton.WithClockMargin(800000 * time.Hour)},
		{baton.WithLease(2562047*time.Hour + 47*time.Minute + 16*time.Second)},
		{baton.WithLease(baton.MaxLease + time.Nanosecond)},
	} {
		err := baton.CheckOptions(opts...)
		var oe *baton.OptionError
		if !errors.As(err, &oe) || oe.Option != "lease" || !strings.Contains(oe.Want, baton.MaxLease.String()) {
			t.Errorf("CheckOptions: %v, want an OptionError on lease naming %v", err, baton.MaxLease)
		}
	}
	if err := baton.CheckOptions(baton.WithLease(baton.MaxLease), baton.WithClockMargin(baton.MaxLease-1)); err != nil {
		t.Errorf("the longest lease and margin: %v", err)
	}
}

// hold writes rec as a held record through the store API, as a damaged
// store or another program might.
func hold(t *testing.T, st store.Store, rec store.Record) store.Record {
	t.Helper()
	got, err := st.Swap(context.Background(), store.Swap{Record: rec})
	if err != nil {
		t.Fatalf("writing %+v: %v", rec, err)
	}
	return got
}

// A record whose lease no valid configuration writes (the largest
// Duration, a negative one, zero) is never taken over, however long the
// contender waits: the campaign ends with ErrStoreLost wrapping
// store.ErrCorrupt, and the record is left as it was. A record whose token
// leaves no room for the next one ends the campaign with ErrTokenLimit.
func TestDamagedRecordIsNeverTakenOver(t *testing.T) {
	for _, rec := range []store.Record{
		{Name: "billing", Holder: "evil", Incarnation: "e.1", Lease: math.MaxInt64, Token: 4},
		{Name: "billing", Holder: "evil", Incarnation: "e.1", Lease: -1, Token: 4},
		{Name: "billing", Holder: "evil", Incarnation: "e.1", Lease: 0, Token: 4},
		{Name: "billing", Holder: "evil", Incarnation: "e.1", Lease: lease, Token: baton.MaxToken},
		{Name: "billing", Token: baton.MaxToken, Lease: lease}, // free, but no next token
	} {
		synctest.Test(t, func(t *testing.T) {
			st := memstore.New()
			before := hold(t, st, rec)
			e := newElector(t, st, "a")
			ctx, cancel := context.WithTimeout(t.Context(), 3*24*time.Hour)
			defer cancel()
			term, err := e.Campaign(ctx)
			want := store.ErrCorrupt
			if rec.Token >= baton.MaxToken {
				want = store.ErrTokenLimit
			}
			if term != nil || !errors.Is(err, baton.ErrStoreLost) || !errors.Is(err, want) {
				t.Fatalf("lease %v, token %d: Campaign = %v, %v; want ErrStoreLost wrapping %v", rec.Lease, rec.Token, term, err, want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is not one line: %q", err)
			}
			after, _ := st.Get(context.Background(), "billing")
			if after.Version != before.Version || after.Token != before.Token {
				t.Errorf("the damaged record was written: %+v, was %+v", after, before)
			}
		})
	}
}

// A name held through a session whose record has a lease no valid
// configuration writes is never taken over by a Group either: the
// observer cannot judge the session dead, so the campaign for the name
// ends with ErrCorrupt; the Group goes on with its other names.
func TestDamagedSessionIsNeverJudgedDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		sess := store.SessionPrefix + "evil.1"
		hold(t, st, store.Record{Name: sess, Holder: "evil", Incarnation: "e.1", Lease: math.MaxInt64, Token: 1})
		before := hold(t, st, store.Record{Name: "shard-1", Holder: "evil", Incarnation: "e.1", Lease: lease, Token: 2, Session: sess})
		g, err := baton.NewGroup(st, baton.WithNode("a"), baton.WithLease(lease), baton.WithRenew(renew),
			baton.WithClockMargin(margin), baton.WithPoll(poll))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(context.Background())
		ctx, cancel := context.WithTimeout(t.Context(), 3*24*time.Hour)
		defer cancel()
		if _, err := g.Campaign(ctx, "shard-1"); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Campaign(shard-1) = %v, want ErrCorrupt", err)
		}
		after, _ := st.Get(context.Background(), "shard-1")
		if after.Version != before.Version {
			t.Errorf("the name was taken: %+v", after)
		}
		if s, _ := st.Get(context.Background(), sess); s.Free() {
			t.Errorf("the damaged session was written free")
		}
		if term, err := g.Campaign(ctx, "shard-2"); err != nil || term.Token() != 1 {
			t.Errorf("another name: %v, %v", term, err)
		}
	})
}
