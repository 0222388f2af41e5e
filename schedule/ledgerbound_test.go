package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// boundedStore is a store whose ledger keeps at most rows rows a job, as
// store/kube's does (store.LedgerBounded).
type boundedStore struct {
	store.Store
	rows int
}

func (b boundedStore) LedgerRows() int { return b.rows }

// New refuses, at start and naming the bound, a retention that keeps more
// run ledger rows a job than the store keeps, or every row (no retention,
// or one by age only): such a job would fail once its ledger filled up.
// It accepts a retention within the bound, and any on a store without one.
func TestNewRefusesRetentionAboveLedgerBound(t *testing.T) {
	every, err := schedule.Every(time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	job := schedule.Job{Name: "j", Schedule: every}
	exec := func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil }
	keep := func(r schedule.Retention) []schedule.Option { return []schedule.Option{schedule.WithRetention(r)} }
	bounded := boundedStore{memstore.New(), 500}
	if got := store.LedgerRowsOf(bounded); got != 500 {
		t.Fatalf("LedgerRowsOf = %d, want 500", got)
	}
	for _, tc := range []struct {
		name string
		opts []schedule.Option
		ok   bool
	}{
		{"no retention", nil, false},
		{"the default retention (10,000 rows)", keep(schedule.DefaultRetention), false},
		{"501 rows", keep(schedule.Retention{Rows: 501}), false},
		{"by age only", keep(schedule.Retention{Age: 24 * time.Hour}), false},
		{"500 rows", keep(schedule.Retention{Rows: 500}), true},
		{"a day or 1 row", keep(schedule.Retention{Age: 24 * time.Hour, Rows: 1}), true},
	} {
		_, err := schedule.New(bounded, job, exec, tc.opts...)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var be *bound.Error
		if !errors.As(err, &be) || be.Option != "keep-rows" || !strings.Contains(err.Error(), "at most 500 run ledger rows") {
			t.Errorf("%s: %v; want an error naming keep-rows and the store's bound of 500", tc.name, err)
		}
	}
	if _, err := schedule.New(memstore.New(), job, exec); err != nil {
		t.Errorf("no retention on a store without a bound: %v", err)
	}
	if got := store.LedgerRowsOf(boundedStore{memstore.New(), -3}); got != 0 {
		t.Errorf("LedgerRowsOf of a store reporting -3 = %d, want 0 (no bound)", got)
	}
}
