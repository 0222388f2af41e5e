package model

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// The CLI's golden files hold the lesson's two blocks, checked against the
// lesson's text by the CLI's tests.
const (
	measureGolden = "../../../cmd/baton/testdata/model_measure.golden"
	costGolden    = "../../../cmd/baton/testdata/model_cost.golden"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBlocksAreTheLessons(t *testing.T) {
	t.Run("measure", func(t *testing.T) {
		got, err := MeasureBlock(DefaultParams(), []int{2, 3, 5, 8}, []int{5, 2})
		if want := readFile(t, measureGolden); err != nil || got != want {
			t.Errorf("MeasureBlock = %v\n%s\nwant\n%s", err, got, want)
		}
	})
	t.Run("cost", func(t *testing.T) {
		got, err := CostBlock(DefaultParams(), DefaultCostOptions())
		if want := readFile(t, costGolden); err != nil || got != want {
			t.Errorf("CostBlock = %v\n%s\nwant\n%s", err, got, want)
		}
	})
}

func TestMeasureBlockVaries(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Params)
		leases  []int
		outages []int
		wants   []string
	}{
		{"header follows params", func(p *Params) { p.Nodes, p.Outage, p.Triggers = 7, 3, []int{9} },
			[]int{3}, []int{3},
			[]string{"7 nodes, 24 rounds, lease 3, renewal 3; the leader node is unreachable in rounds 6-8. End-of-day batch trigger: round 9.\n",
				"outage (3 rounds)"}},
		{"no outage, no triggers", func(p *Params) { p.Outage, p.Triggers = 0, nil },
			[]int{1}, []int{1, 4, 9},
			[]string{"the leader node stays reachable. End-of-day batch trigger: none.\n",
				"short outage (1 round)", "outage (4 rounds)", "long outage (9 rounds)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.edit(&p)
			got, err := MeasureBlock(p, tt.leases, tt.outages)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wants {
				if !strings.Contains(got, w) {
					t.Errorf("block lacks %q:\n%s", w, got)
				}
			}
			if rows := strings.Count(got, "\n"); rows != 2+1+len(measureRows)+1+2+len(tt.leases) {
				t.Errorf("block has %d lines:\n%s", rows, got)
			}
		})
	}
}

func TestCostBlockVaries(t *testing.T) {
	o := CostOptions{InvoiceLines: 1000, HandoversPerYear: []int{3, 24}, LongLease: 2}
	got, err := CostBlock(DefaultParams(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"one batch = 1000 invoice lines",
		// 3 x 2/24 = 0.25 batches; 24 x 2/24 = 2 batches.
		"    3                 0.25                250              0.25          250\n",
		"   24                 2.00               2000              2.00         2000\n",
		"with lease 2 (long): handover rounds 2, leaderless rounds 1, two-leader rounds 2\n",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("block lacks %q:\n%s", w, got)
		}
	}
}

func TestBlockErrors(t *testing.T) {
	bad := DefaultParams()
	bad.Nodes = 1
	tests := []struct {
		name  string
		err   func() error
		field string
	}{
		{"measure bad params", func() error { _, err := MeasureBlock(bad, []int{3}, []int{5}); return err }, "nodes"},
		{"measure no leases", func() error { _, err := MeasureBlock(DefaultParams(), nil, []int{5}); return err }, "leases"},
		{"measure zero lease", func() error { _, err := MeasureBlock(DefaultParams(), []int{0}, []int{5}); return err }, "leases"},
		{"measure negative outage", func() error { _, err := MeasureBlock(DefaultParams(), []int{3}, []int{-1}); return err }, "outages"},
		{"cost bad params", func() error { _, err := CostBlock(bad, DefaultCostOptions()); return err }, "nodes"},
		{"cost negative lines", func() error {
			o := DefaultCostOptions()
			o.InvoiceLines = -1
			_, err := CostBlock(DefaultParams(), o)
			return err
		}, "invoice-lines"},
		{"cost no handovers", func() error {
			o := DefaultCostOptions()
			o.HandoversPerYear = nil
			_, err := CostBlock(DefaultParams(), o)
			return err
		}, "handovers"},
		{"cost zero long lease", func() error {
			o := DefaultCostOptions()
			o.LongLease = 0
			_, err := CostBlock(DefaultParams(), o)
			return err
		}, "long-lease"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("error = %v, want a FieldError for %s", err, tt.field)
			}
		})
	}
}

func TestToFixed(t *testing.T) {
	// Values checked against JavaScript's Number.prototype.toFixed.
	tests := []struct {
		x      float64
		digits int
		want   string
	}{
		{0.125, 2, "0.13"}, // an exact tie: away from zero, not to even
		{2.5, 0, "3"},
		{1.005, 2, "1.00"}, // 1.005 is just below the tie in binary
		{2.0 / 24, 4, "0.0833"},
		{2000, 0, "2000"},
		{0, 2, "0.00"},
		{-0.5, 0, "-1"},
		{0.001, 2, "0.00"},
	}
	for _, tt := range tests {
		if got := toFixed(tt.x, tt.digits); got != tt.want {
			t.Errorf("toFixed(%v, %d) = %q, want %q", tt.x, tt.digits, got, tt.want)
		}
	}
}
