package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// planString renders a plan as "claim 00:10 skip 00:20 ..." with keys
// shortened to the time of day.
func planString(p scheduler.Plan) string {
	var b []string
	for _, a := range p.Moves {
		k := a.Period.Key[11:16]
		if a.Period.Manual {
			k += "(m)"
		}
		b = append(b, fmt.Sprintf("%s %s", a.Step, k))
	}
	return strings.Join(b, ", ")
}

func row(job, key string, state store.RunState, token uint64, version int64) store.Run {
	at, err := schedule.ParseKey(key)
	if err != nil {
		panic(err)
	}
	return store.Run{Job: job, Period: key, Scheduled: at, State: state, Token: token, Version: version, Attempt: 1}
}

func TestDecide(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := base.Add(-time.Minute) // registered at 23:59
	now := base.Add(35 * time.Minute) // 00:35: 00:00 .. 00:30 are due
	k := func(min int) string { return schedule.Key(base.Add(time.Duration(min) * time.Minute)) }
	manual := func(r store.Run) store.Run { r.Manual = true; return r }

	tests := []struct {
		name   string
		policy scheduler.Policy
		now    time.Time
		token  uint64
		rows   []store.Run
		limit  int
		floor  time.Time
		want   string

		busyFrom, busyTo time.Time
	}{
		{name: "all, nothing run yet", want: "claim 00:00, claim 00:10, claim 00:20, claim 00:30"},
		{name: "latest", policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest},
			want: "skip 00:00, skip 00:10, skip 00:20, claim 00:30"},
		{name: "none", policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone},
			want: "skip 00:00, skip 00:10, skip 00:20, claim 00:30"},
		{name: "window 20m", policy: scheduler.Policy{Window: 20 * time.Minute},
			want: "skip 00:00, skip 00:10, claim 00:20, claim 00:30"},
		{name: "window exact bound is in", policy: scheduler.Policy{Window: 25 * time.Minute},
			want: "skip 00:00, claim 00:10, claim 00:20, claim 00:30"},
		{name: "latest within window", policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest, Window: time.Minute},
			want: "skip 00:00, skip 00:10, skip 00:20, skip 00:30"},
		{name: "done rows are final", rows: []store.Run{
			row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Skipped, 1, 6)},
			want: "claim 00:20, claim 00:30"},
		{name: "failed is final too", rows: []store.Run{row("j", k(0), store.Failed, 1, 5)},
			want: "claim 00:10, claim 00:20, claim 00:30"},
		{name: "running under an older token is taken over", token: 3,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Running, 2, 6)},
			want: "claim 00:10, claim 00:20, claim 00:30"},
		{name: "running under this token: a claim whose reply was lost", token: 3,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Running, 3, 6)},
			want: "claim 00:10, claim 00:20, claim 00:30"},
		{name: "running under a newer token is left alone", token: 3,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Running, 4, 6)},
			want: "claim 00:20, claim 00:30"},
		{name: "latest: the interrupted current period runs, older interrupted skipped",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest}, token: 5,
			rows: []store.Run{row("j", k(0), store.Running, 1, 5), row("j", k(10), store.Done, 2, 6),
				row("j", k(20), store.Done, 2, 7), row("j", k(30), store.Running, 2, 8)},
			want: "skip 00:00, claim 00:30"},
		{name: "latest runs the newest due even if a newer one is done",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest}, token: 5,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Done, 1, 6),
				row("j", k(20), store.Running, 2, 7), row("j", k(30), store.Done, 5, 8)},
			want: "claim 00:20"},
		{name: "none skips all but the current one",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone}, token: 5,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Done, 1, 6),
				row("j", k(20), store.Running, 2, 7), row("j", k(30), store.Done, 5, 8)},
			want: "skip 00:20"},
		{name: "none: the interrupted current period is taken over, not skipped",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone}, token: 5,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Done, 1, 6),
				row("j", k(20), store.Done, 2, 7), row("j", k(30), store.Running, 2, 8)},
			want: "claim 00:30"},
		{name: "none: the current period taken over from above the floor",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone}, token: 5, floor: base.Add(20 * time.Minute),
			rows: []store.Run{row("j", k(30), store.Running, 2, 8)},
			want: "claim 00:30"},
		{name: "manual triggers always run, in key order, never skipped by policy",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone, Window: time.Minute},
			rows: []store.Run{manual(row("j", "2025-06-01T12:00:00Z", store.Pending, 0, 3)),
				manual(row("j", k(15), store.Pending, 0, 4))},
			want: "claim 12:00(m), skip 00:00, skip 00:10, claim 00:15(m), skip 00:20, skip 00:30"},
		{name: "a manual trigger on a scheduled instant is that period",
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpNone},
			rows:   []store.Run{manual(row("j", k(10), store.Pending, 0, 3))},
			want:   "skip 00:00, claim 00:10(m), skip 00:20, claim 00:30"},
		{name: "a manual trigger in the future waits",
			rows: []store.Run{manual(row("j", k(50), store.Pending, 0, 3))},
			want: "claim 00:00, claim 00:10, claim 00:20, claim 00:30"},
		{name: "nothing before the job was created", now: base.Add(5 * time.Minute),
			want: "claim 00:00"},
		{name: "limit: latest skips the whole batch when more are due", limit: 2,
			policy: scheduler.Policy{CatchUp: scheduler.CatchUpLatest},
			want:   "skip 00:00, skip 00:10"},
		{name: "limit: rows after the batch wait behind the instants left out", limit: 2,
			rows: []store.Run{manual(row("j", k(25), store.Pending, 0, 3))},
			want: "claim 00:00, claim 00:10"},
		{name: "floor: instants up to it are final", floor: base.Add(10 * time.Minute),
			want: "claim 00:20, claim 00:30"},
		{name: "cap: only the newest max missed periods run", policy: scheduler.Policy{Max: 2},
			want: "skip 00:00, skip 00:10, claim 00:20, claim 00:30"},
		{name: "cap: manual triggers are not periods behind", policy: scheduler.Policy{Max: 2},
			rows: []store.Run{manual(row("j", k(15), store.Pending, 0, 4))},
			want: "skip 00:00, skip 00:10, claim 00:15(m), claim 00:20, claim 00:30"},
		{name: "cap: an explicit pending row is never capped", policy: scheduler.Policy{Max: 1},
			rows: []store.Run{row("j", k(0), store.Pending, 0, 4)},
			want: "claim 00:00, skip 00:10, skip 00:20, claim 00:30"},
		{name: "cap: across a batch left out by the limit", policy: scheduler.Policy{Max: 2}, limit: 2,
			want: "skip 00:00, skip 00:10"},
		{name: "cap: a batch within the cap runs", policy: scheduler.Policy{Max: 4}, limit: 2,
			want: "claim 00:00, claim 00:10"},
		{name: "cap: a failed row beyond the cap is not retried", token: 2,
			policy: scheduler.Policy{Max: 2, Retries: 1, RetryBackoff: time.Minute},
			rows:   []store.Run{func() store.Run { r := row("j", k(0), store.Failed, 1, 5); r.Finished = base; return r }()},
			want:   "skip 00:10, claim 00:20, claim 00:30"},
		{name: "overlap skip: periods due during the last run are skipped", policy: scheduler.Policy{Overlap: scheduler.OverlapSkip},
			busyFrom: base.Add(-time.Minute), busyTo: base.Add(21 * time.Minute),
			want: "skip 00:00, skip 00:10, skip 00:20, claim 00:30"},
		{name: "overlap queue runs them", policy: scheduler.Policy{Overlap: scheduler.OverlapQueue},
			busyFrom: base.Add(-time.Minute), busyTo: base.Add(21 * time.Minute),
			want: "claim 00:00, claim 00:10, claim 00:20, claim 00:30"},
		{name: "overlap skip: a row (a re-run) is not skipped", policy: scheduler.Policy{Overlap: scheduler.OverlapSkip},
			busyFrom: base.Add(-time.Minute), busyTo: base.Add(21 * time.Minute),
			rows: []store.Run{row("j", k(10), store.Pending, 0, 4)},
			want: "claim 00:10, skip 00:20, claim 00:30"},
		{name: "limit counts only open instants", limit: 2,
			rows: []store.Run{row("j", k(0), store.Done, 1, 5), row("j", k(10), store.Done, 1, 6)},
			want: "claim 00:20, claim 00:30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := scheduler.Input{Now: now, Created: created, Schedule: every10m, Policy: tt.policy,
				Token: tt.token, Rows: tt.rows, Limit: tt.limit, Floor: tt.floor, BusyFrom: tt.busyFrom, BusyTo: tt.busyTo}
			if !tt.now.IsZero() {
				in.Now = tt.now
			}
			if in.Token == 0 {
				in.Token = 1
			}
			p := scheduler.Decide(in)
			if got := planString(p); got != tt.want {
				t.Errorf("plan\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestDecideWake(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := scheduler.Input{Now: base.Add(35 * time.Minute), Created: base.Add(34 * time.Minute), Schedule: every10m, Token: 1}
	if p := scheduler.Decide(in); len(p.Moves) != 0 || !p.Wake.Equal(base.Add(40*time.Minute)) {
		t.Fatalf("plan %s wake %v", planString(p), p.Wake)
	}
	r := row("j", schedule.Key(base.Add(37*time.Minute)), store.Pending, 0, 1)
	r.Manual = true
	in.Rows = []store.Run{r}
	if p := scheduler.Decide(in); !p.Wake.Equal(base.Add(37 * time.Minute)) {
		t.Fatalf("wake %v, want the future manual trigger", p.Wake)
	}
	in.Schedule = nil // manual triggers only
	if p := scheduler.Decide(in); len(p.Moves) != 0 || !p.Wake.Equal(base.Add(37*time.Minute)) {
		t.Fatalf("manual-only plan %s wake %v", planString(p), p.Wake)
	}
}

// Jitter delays each period's first claim by a delay drawn from the job's
// name and the period key: the same for every caller, within [0, max],
// and spread over it.
func TestDecideJitter(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := scheduler.Policy{Jitter: 5 * time.Minute}
	j0 := scheduler.JitterOf("j", schedule.Key(base), pol.Jitter)
	in := scheduler.Input{Job: "j", Now: base.Add(j0 - time.Millisecond), Created: base.Add(-time.Minute),
		Schedule: every10m, Policy: pol, Token: 1}
	if p := scheduler.Decide(in); len(p.Moves) != 0 || !p.Wake.Equal(base.Add(j0)) {
		t.Fatalf("before its jitter (%v): plan %q wake %v, want none and %v", j0, planString(p), p.Wake, base.Add(j0))
	}
	in.Now = base.Add(j0)
	if p := scheduler.Decide(in); planString(p) != "claim 00:00" {
		t.Fatalf("at its jitter: plan %q", planString(p))
	}
	// A claimed row (taken over after a handover) is not delayed again.
	in.Now, in.Token = base.Add(time.Second), 2
	in.Rows = []store.Run{row("j", schedule.Key(base), store.Running, 1, 3)}
	if j0 > time.Second {
		if p := scheduler.Decide(in); planString(p) != "claim 00:00" {
			t.Fatalf("a taken-over row waited for its jitter again: %q", planString(p))
		}
	}

	// 100 jobs on one minute spread over the jitter; every call agrees.
	const spread = 30 * time.Second
	seen := map[time.Duration]bool{}
	var lo, hi time.Duration = spread, 0
	for i := range 100 {
		d := scheduler.JitterOf(fmt.Sprintf("job-%d", i), "2026-01-01T00:00:00Z", spread)
		if d != scheduler.JitterOf(fmt.Sprintf("job-%d", i), "2026-01-01T00:00:00Z", spread) || d < 0 || d > spread {
			t.Fatalf("job-%d: jitter %v", i, d)
		}
		seen[d], lo, hi = true, min(lo, d), max(hi, d)
	}
	if len(seen) < 90 || lo > 3*time.Second || hi < 27*time.Second {
		t.Errorf("100 jobs: %d distinct delays from %v to %v; want them spread over [0, %v]", len(seen), lo, hi, spread)
	}
	if d := scheduler.JitterOf("j", "k", 0); d != 0 {
		t.Errorf("no jitter: %v", d)
	}
}

func TestActionRows(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := store.Run{Job: "j", Period: schedule.Key(at), Scheduled: at, State: store.Running, Token: 2, Attempt: 1, Version: 9}
	a := scheduler.Move{Step: scheduler.Claim, Period: scheduler.Period{Key: prev.Period, Scheduled: at}, Prev: prev}
	now := at.Add(90 * time.Second)
	sw := a.Swap("j", 3, "b", now)
	if !sw.Fenced || sw.Expect != 9 || sw.Run.State != store.Running || sw.Run.Token != 3 || sw.Run.Holder != "b" ||
		sw.Run.Attempt != 2 || !sw.Run.Started.Equal(now) || schedule.Delay(sw.Run) != 90*time.Second {
		t.Fatalf("claim swap %+v", sw)
	}
	claimed := sw.Run
	claimed.Version = 10
	done := scheduler.Complete(claimed, 0, "ok\n", nil, now.Add(time.Second))
	if !done.Fenced || done.Expect != 10 || done.Run.State != store.Done || done.Run.Output != "ok\n" {
		t.Fatalf("done swap %+v", done)
	}
	failed := scheduler.Complete(claimed, 0, "half", fmt.Errorf("boom"), now)
	if failed.Run.State != store.Failed || failed.Run.ExitCode != -1 || failed.Run.Output != "half\nboom" {
		t.Fatalf("failed swap %+v", failed)
	}
	if scheduler.Complete(claimed, 3, "", nil, now).Run.State != store.Failed {
		t.Fatal("exit 3 is not failed")
	}
}

func TestPlanBackfill(t *testing.T) {
	daily, _ := schedule.Every(24*time.Hour, 2*time.Hour)
	day := func(d int) time.Time { return time.Date(2026, 3, d, 2, 0, 0, 0, time.UTC) }
	now := day(10)
	rows := []store.Run{
		row("j", schedule.Key(day(2)), store.Done, 1, 3),
		row("j", schedule.Key(day(3)), store.Failed, 1, 4),
		row("j", schedule.Key(day(4)), store.Skipped, 1, 5),
		row("j", schedule.Key(day(5)), store.Running, 1, 6),
		row("j", schedule.Key(day(6))+"~manual.000001", store.Pending, 0, 7), // a manual key: not a period
	}
	items, err := scheduler.PlanBackfill(daily, day(1), day(6), now, rows, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Period.Key[8:10]+" "+it.Do)
		if !it.Period.Manual {
			t.Errorf("%s: a backfilled period is written as a manual run of its own key", it.Period.Key)
		}
	}
	if want := "01 add, 02 keep, 03 rerun, 04 rerun, 05 keep, 06 add"; strings.Join(got, ", ") != want {
		t.Errorf("plan %s, want %s", strings.Join(got, ", "), want)
	}
	// The bounds are inclusive; a range between instants has none.
	if items, _ := scheduler.PlanBackfill(daily, day(2), day(2), now, nil, 10); len(items) != 1 {
		t.Errorf("one-instant range: %d items", len(items))
	}
	for name, call := range map[string]func() error{
		"to before from": func() error { _, err := scheduler.PlanBackfill(daily, day(3), day(2), now, nil, 10); return err },
		"to in the future": func() error {
			_, err := scheduler.PlanBackfill(daily, day(3), day(11), now, nil, 10)
			return err
		},
		"more than max": func() error { _, err := scheduler.PlanBackfill(daily, day(1), day(9), now, nil, 3); return err },
		"no instant": func() error {
			_, err := scheduler.PlanBackfill(daily, day(2).Add(time.Hour), day(2).Add(2*time.Hour), now, nil, 3)
			return err
		},
		"no schedule": func() error { _, err := scheduler.PlanBackfill(nil, day(1), day(2), now, nil, 3); return err },
		"max 0":       func() error { _, err := scheduler.PlanBackfill(daily, day(1), day(2), now, nil, 0); return err },
	} {
		if call() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A backfilled period (a manual run of a scheduled key) is claimed in key
// order whatever the policy: no cap, window, catch-up mode or overlap
// skips it.
func TestDecideRunsBackfilledRows(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := row("j", schedule.Key(base.Add(-24*time.Hour)), store.Pending, 0, 3)
	old.Manual = true
	done := row("j", schedule.Key(base.Add(30*time.Minute)), store.Done, 1, 4)
	in := scheduler.Input{Job: "j", Now: base.Add(35 * time.Minute), Created: base.Add(-time.Minute), Schedule: every10m, Token: 2,
		Policy: scheduler.Policy{Max: 1, Window: time.Minute, CatchUp: scheduler.CatchUpNone, Overlap: scheduler.OverlapSkip, Jitter: time.Hour},
		Rows:   []store.Run{old, done}, BusyFrom: base.Add(-48 * time.Hour), BusyTo: base}
	if got := planString(scheduler.Decide(in)); got != "claim 00:00(m)" {
		t.Errorf("plan %q, want the backfilled row claimed", got)
	}
}

// The first catch-up of a term is logged with what it runs, what it skips
// and why.
func TestMachineLogsCatchUp(t *testing.T) {
	every10m, _ := schedule.Every(10*time.Minute, 0)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := scheduler.New(scheduler.Config{Job: "j", Schedule: every10m, Policy: scheduler.Policy{Max: 2},
		Poll: time.Minute, Rescan: time.Hour, Retry: time.Minute})
	now := base.Add(35 * time.Minute)
	m.Step(now, scheduler.Start{Token: 1, Node: "n"})
	m.Step(now, scheduler.Registered{Job: store.Job{Name: "j", Created: base.Add(-time.Minute)}})
	m.Step(now, scheduler.JobRead{Job: store.Job{Name: "j", Created: base.Add(-time.Minute)}})
	var notes []string
	for _, a := range m.Step(now, scheduler.RunsRead{}) {
		if n, ok := a.(scheduler.Note); ok {
			notes = append(notes, n.Msg)
		}
	}
	want := "catching up missed periods: 1 to run, 2 skipped (catch-up all, at most the newest 2, no window)"
	if len(notes) == 0 || notes[0] != want {
		t.Errorf("notes %q, want first %q", notes, want)
	}
	if err := (scheduler.Policy{Max: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "catch-up-max") {
		t.Errorf("a negative cap: %v", err)
	}
	for _, p := range []scheduler.Policy{{Overlap: "wait"}, {Jitter: -time.Second}, {Jitter: 25 * time.Hour}, {Max: scheduler.MaxCatchUp + 1}} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
