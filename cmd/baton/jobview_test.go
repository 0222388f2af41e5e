package main

import (
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// The election log as a timeline: a row per holder, a bar per term, a band
// where nobody held the name; a transfer's release (no holder) is not a row.
func TestHistoryChart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(sec int, kind store.EventKind, holder string, token uint64) eventView {
		return eventView{Kind: string(kind), Holder: holder, Token: token, Time: t0.Add(time.Duration(sec) * time.Second)}
	}
	upd := t0.Add(60 * time.Second)
	d := jobDetail{jobSummary: jobSummary{Name: "billing", Updated: &upd}, History: []eventView{
		ev(0, store.Acquired, "a", 1),
		ev(10, store.TransferRequested, "a", 1),
		ev(11, store.Transferred, "", 1),
		ev(12, store.Transferred, "b", 2),
		ev(20, store.Released, "", 2),
		ev(30, store.Acquired, "a", 3),
		ev(40, store.TakenOver, "c", 4),
	}}
	svg := string(historyChart(d))
	for what, want := range map[string]int{
		`<g class="row"`:   3, // a, b, c
		`class="bar held"`: 4, // a/1, b/2, a/3, c/4
		`class="band `:     2, // 11s to 12s (a transfer), 20s to 30s
		`data-row=""`:      0,
	} {
		if got := strings.Count(svg, what); got != want {
			t.Errorf("%d of %s, want %d\n%s", got, what, want, svg)
		}
	}
	for _, label := range []string{"token 1", "token 2", "token 3", "token 4"} {
		if !strings.Contains(svg, label) {
			t.Errorf("no %q in the chart", label)
		}
	}
	if historyChart(jobDetail{}) != "" {
		t.Error("a chart without history")
	}
}
