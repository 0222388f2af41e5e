package election_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// hostileLeases are stored leases at and beyond every edge: what a damaged
// or hostile record, or another program, may hold.
var hostileLeases = []time.Duration{
	math.MinInt64, -1, 0, 1, election.MinLease - 1, election.MinLease, time.Second,
	15 * time.Second, election.MaxLease, election.MaxLease + 1,
	2562047*time.Hour + 47*time.Minute + 16*time.Second, math.MaxInt64 - 1, math.MaxInt64,
}

// hostileTokens are stored tokens near both ends.
var hostileTokens = []uint64{0, 1, 7, election.MaxToken - 2, election.MaxToken - 1, election.MaxToken, election.MaxToken + 1, math.MaxUint64}

// drawConfig draws a Config anywhere in its valid range, bounds included.
func drawConfig(t *rapid.T) election.Config {
	lease := rapid.SampledFrom([]time.Duration{election.MinLease, election.MaxLease,
		time.Duration(rapid.Int64Range(int64(election.MinLease), int64(election.MaxLease)).Draw(t, "lease"))}).Draw(t, "leaseKind")
	half := lease / 2
	between := func(label string, lo, hi time.Duration) time.Duration {
		return rapid.SampledFrom([]time.Duration{lo, hi,
			time.Duration(rapid.Int64Range(int64(lo), int64(hi)).Draw(t, label))}).Draw(t, label+"Kind")
	}
	c := election.Config{
		Name: "job", Node: "contender", Incarnation: "c.1", Lease: lease,
		Renew:  between("renew", election.MinInterval, half),
		Margin: between("margin", 0, lease-1),
		Poll:   between("poll", election.MinInterval, half),
		Retry:  between("retry", election.MinInterval, half),
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("drew an invalid config: %v", err)
	}
	return c
}

// watch drives one contender against a record that another node holds
// and that never changes, answering every read with it, until the
// contender swaps, fails, or until the horizon passes. It returns a
// description of what went wrong, or "".
func watch(cfg election.Config, rec store.Record, start time.Time) string {
	m := election.New(cfg)
	valid := rec.Lease >= election.MinLease && rec.Lease <= election.MaxLease && rec.Token < election.MaxToken
	// The earliest instant a takeover is safe: the holder's own deadline
	// is at most its lease after the last renewal, which was before the
	// contender first saw this version; the 2e covers the clocks.
	safe := time.Duration(math.MaxInt64)
	if valid {
		safe = rec.Lease + 2*cfg.Margin
	}
	horizon := 3*election.MaxLease + time.Hour
	now := start
	acts := m.Step(now, election.Start{})
	for steps := 0; steps < 100_000; steps++ {
		var failed error
		reads := 0
		for _, a := range acts {
			switch a := a.(type) {
			case election.Get:
				reads++
			case election.Swap:
				waited := now.Sub(start)
				switch {
				case !valid:
					return fmt.Sprintf("took over a record it cannot trust (lease %v, token %d) after %v", rec.Lease, rec.Token, waited)
				case waited < safe:
					return fmt.Sprintf("took over after %v, before lease + 2e = %v", waited, safe)
				case a.Swap.Record.Token != rec.Token+1:
					return fmt.Sprintf("took token %d over %d", a.Swap.Record.Token, rec.Token)
				}
				return ""
			case election.Failed:
				failed = a.Err
			case election.Elected:
				return "elected without a swap"
			}
		}
		if failed != nil {
			if valid {
				return fmt.Sprintf("a valid record ended the campaign: %v", failed)
			}
			if !(errors.Is(failed, store.ErrCorrupt) || errors.Is(failed, store.ErrTokenLimit)) || strings.ContainsAny(failed.Error(), "\n") {
				return fmt.Sprintf("damage reported as %q, want one line wrapping ErrCorrupt or ErrTokenLimit", failed)
			}
			return ""
		}
		if reads > 0 {
			acts = m.Step(now, election.GetReply{Name: cfg.Name, Record: rec})
			continue
		}
		next := m.Next()
		if next.IsZero() {
			return "the contender stopped watching without a decision"
		}
		if next.Before(now) {
			return fmt.Sprintf("a timer in the past: %v before %v", next, now)
		}
		if next.Sub(start) > horizon {
			if valid {
				return fmt.Sprintf("no takeover within %v of a valid record", horizon)
			}
			return "a damaged record was neither reported nor refused"
		}
		// Ticks may come late, as on a loaded host: jump a hundredth of
		// the wait at a time, and land just before the safe instant, so
		// that a run with a 1 ms poll and a day's margin stays short.
		window := min(safe, horizon)
		if jump := now.Add(window / 100); jump.After(next) {
			next = jump
			if edge := start.Add(safe - 1); valid && now.Before(edge) && edge.Before(next) {
				next = edge
			}
		}
		now = next
		acts = m.Step(now, election.Tick{})
	}
	return "no decision within 100,000 steps"
}

// A contender anywhere in the valid range, facing a record with any
// lease and any token, never takes it over before lease + 2e of its own
// clock, and reports a record it cannot trust as damage in one line.
func TestNoEarlyTakeoverAtTheEdges(t *testing.T) { rapid.Check(t, noEarlyTakeover) }

// noEarlyTakeover is one draw of TestNoEarlyTakeoverAtTheEdges (and of
// FuzzNoEarlyTakeover).
func noEarlyTakeover(t *rapid.T) {
	{
		cfg := drawConfig(t)
		rec := store.Record{
			Name: cfg.Name, Holder: "holder", Incarnation: "h.1",
			Lease:   rapid.SampledFrom(hostileLeases).Draw(t, "recLease"),
			Token:   rapid.SampledFrom(hostileTokens).Draw(t, "recToken"),
			Version: rapid.Int64Range(1, math.MaxInt64).Draw(t, "version"),
		}
		// Instants far from the epoch too: a deadline near the end of
		// time.Time's range must not wrap.
		start := time.Unix(rapid.SampledFrom([]int64{0, 1 << 40, 1 << 62}).Draw(t, "start"), 0)
		if v := watch(cfg, rec, start); v != "" {
			t.Fatal(v)
		}
	}
}

// The property above is not vacuous: with the arithmetic as it was (the
// WrapDeadline mutation), a record whose lease is the largest Duration is
// taken over at once.
func TestNoEarlyTakeoverCatchesWrappingDeadline(t *testing.T) {
	cfg := election.Config{Name: "job", Node: "contender", Incarnation: "c.1",
		Lease: 2 * time.Second, Renew: 500 * time.Millisecond, Margin: 500 * time.Millisecond,
		Poll: 100 * time.Millisecond, Retry: 100 * time.Millisecond}
	cfg.Mutate.WrapDeadline = true
	for _, lease := range []time.Duration{math.MaxInt64, 2562047*time.Hour + 47*time.Minute + 16*time.Second, -1} {
		rec := store.Record{Name: "job", Holder: "holder", Incarnation: "h.1", Lease: lease, Token: 3, Version: 9}
		if v := watch(cfg, rec, time.Unix(0, 0)); v == "" {
			t.Errorf("lease %v with wrapping arithmetic: no violation found", lease)
		}
	}
}

// Validate refuses every field outside its bounds, naming the field.
func TestConfigValidate(t *testing.T) {
	ok := election.Config{Node: "n", Incarnation: "i", Lease: 3 * time.Second, Renew: time.Second,
		Margin: 100 * time.Millisecond, Poll: 200 * time.Millisecond, Retry: 200 * time.Millisecond}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	for _, tc := range []struct {
		field string
		mod   func(*election.Config)
	}{
		{"lease", func(c *election.Config) { c.Lease = election.MinLease - 1 }},
		{"lease", func(c *election.Config) { c.Lease = election.MaxLease + 1 }},
		{"lease", func(c *election.Config) { c.Lease = 2000000 * time.Hour }},
		{"lease", func(c *election.Config) { c.Lease = -time.Second }},
		{"renew", func(c *election.Config) { c.Renew = 0 }},
		{"renew", func(c *election.Config) { c.Renew = c.Lease/2 + 1 }},
		{"clock-margin", func(c *election.Config) { c.Margin = -1 }},
		{"clock-margin", func(c *election.Config) { c.Margin = c.Lease }},
		{"clock-margin", func(c *election.Config) { c.Margin = 800000 * time.Hour }},
		{"poll", func(c *election.Config) { c.Poll = 0 }},
		{"poll", func(c *election.Config) { c.Poll = c.Lease }},
		{"retry", func(c *election.Config) { c.Retry = math.MaxInt64 }},
		{"check", func(c *election.Config) { c.Check = -1 }},
		{"check", func(c *election.Config) { c.Check = math.MaxInt64 }},
		{"take-step", func(c *election.Config) { c.TakeStep = -1 }},
		{"node", func(c *election.Config) { c.Node = "" }},
		{"node", func(c *election.Config) { c.Node = "a\x1bb" }},
		{"incarnation", func(c *election.Config) { c.Incarnation = "" }},
	} {
		c := ok
		tc.mod(&c)
		var ce *bound.Error
		if err := c.Validate(); !errors.As(err, &ce) || ce.Option != tc.field {
			t.Errorf("%s: %v, want a bound.Error naming %s", tc.field, err, tc.field)
		}
	}
}
