package history

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

var t0 = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func key(min int) string { return t0.Add(time.Duration(min) * time.Minute).Format(time.RFC3339) }

// production is a clean record of one handover: a leads with token 1 and
// does P0 and P1; b takes over with token 2 and does P2 and P3; a's late
// write of P2 is refused (the fence held 2); P4 is pending.
func production() Production {
	ev := func(seq uint64, kind store.EventKind, holder string, token uint64, min int) store.Event {
		return store.Event{Seq: seq, Name: "job", Kind: kind, Holder: holder, Incarnation: "i", Token: token, Time: t0.Add(time.Duration(min) * time.Minute)}
	}
	run := func(min int, state store.RunState, token uint64) store.Run {
		return store.Run{Job: "job", Period: key(min), Scheduled: t0.Add(time.Duration(min) * time.Minute), State: state, Token: token}
	}
	log := func(seq int64, token uint64, min int, outcome string, highest uint64) fence.LogEntry {
		p := ""
		if min >= 0 {
			p = key(min)
		}
		return fence.LogEntry{Seq: seq, Name: "job", Token: token, Period: p, Outcome: outcome, Highest: highest}
	}
	return Production{
		Name: "job",
		Events: []store.Event{
			ev(1, store.Acquired, "a", 1, -1),
			ev(2, store.TakenOver, "b", 2, 2),
		},
		Ledger: []store.Run{run(0, store.Done, 1), run(1, store.Done, 1), run(2, store.Done, 2), run(3, store.Done, 2), run(4, store.Pending, 0)},
		Log: []fence.LogEntry{
			log(1, 1, 0, fence.Accepted, 1),
			log(2, 1, 1, fence.Accepted, 1),
			log(3, 2, -1, fence.Accepted, 2), // b raises the fence on taking office
			log(4, 2, 2, fence.Accepted, 2),
			log(5, 1, 2, fence.Refused, 2),
			log(6, 2, 3, fence.Accepted, 2),
		},
		HasLog: true,
		Record: &store.Record{Name: "job", Holder: "b", Incarnation: "i", Token: 2, Lease: time.Minute},
		Now:    t0.Add(time.Hour),
	}
}

func TestVerifyClean(t *testing.T) {
	p := production()
	// The writers' clocks disagree: the takeover is dated before the
	// acquisition. The log's order is what counts.
	p.Events[1].Time = t0.Add(-2 * time.Minute)
	rep := Verify(p)
	if !rep.OK() {
		t.Fatalf("a clean production record has violations: %+v", rep.Violations)
	}
	if rep.Terms != 2 || rep.Accepted != 5 || rep.Refused != 1 || len(rep.Periods) != 5 || rep.Judged != 5 || rep.Verdict() != ExactlyOnce {
		t.Fatalf("counts: %+v, verdict %q", rep, rep.Verdict())
	}
	p2 := rep.Periods[2]
	if p2.Verdict != "exactly once" || !slices.Equal(p2.Accepted, []uint64{2}) || !slices.Equal(p2.Refused, []uint64{1}) {
		t.Errorf("P2: %+v, want accepted by 2, refused 1", p2)
	}
	if v := rep.Periods[4].Verdict; v != "at most once" {
		t.Errorf("pending P4: %q", v)
	}
}

// A handover by transfer ('baton transfer', a preference's handover) logs
// the holder's release towards the target (transferred, no holder, the
// old token) and the target's take (transferred, token + 1): one new
// term, no token reused.
func TestVerifyTransfer(t *testing.T) {
	p := production()
	p.Events[1] = store.Event{Seq: 2, Name: "job", Kind: store.Transferred, Token: 1, Transfer: "b", Time: t0.Add(2 * time.Minute)}
	p.Events = append(p.Events, store.Event{Seq: 3, Name: "job", Kind: store.Transferred, Holder: "b", Incarnation: "i", Token: 2, Time: t0.Add(2 * time.Minute)})
	rep := Verify(p)
	if !rep.OK() || rep.Terms != 2 || rep.Verdict() != ExactlyOnce {
		t.Fatalf("a handover by transfer: %d terms, violations %+v", rep.Terms, rep.Violations)
	}
}

// A period whose run a graceful stop cut short and gave back
// (scheduler.Release: pending, under the ending term's token and attempt)
// is judged at most once while it waits, and exactly once when the next
// term ran it (attempt 2, its one accepted write under token 2): the
// interrupted attempt wrote nothing through the fence.
func TestVerifyReleasedThenRun(t *testing.T) {
	p := production()
	released := store.Run{Job: "job", Period: key(4), Scheduled: t0.Add(4 * time.Minute), State: store.Pending, Token: 2, Attempt: 1}
	p.Ledger[4] = released
	rep := Verify(p)
	if !rep.OK() || rep.Periods[4].Verdict != "at most once" {
		t.Fatalf("released P4: %+v, violations %+v", rep.Periods[4], rep.Violations)
	}
	p.Events = append(p.Events, store.Event{Seq: 3, Name: "job", Kind: store.Acquired, Holder: "a", Incarnation: "i", Token: 3, Time: t0.Add(5 * time.Minute)})
	p.Record.Holder, p.Record.Token = "a", 3
	rerun := released
	rerun.State, rerun.Token, rerun.Attempt = store.Done, 3, 2
	p.Ledger[4] = rerun
	p.Log = append(p.Log, fence.LogEntry{Seq: 7, Name: "job", Token: 3, Period: key(4), Outcome: fence.Accepted, Highest: 3})
	rep = Verify(p)
	if !rep.OK() || rep.Periods[4].Verdict != "exactly once" || rep.Verdict() != ExactlyOnce {
		t.Fatalf("P4 run again after its release: %+v, violations %+v, verdict %q", rep.Periods[4], rep.Violations, rep.Verdict())
	}
}

// Each rule fails on a record that breaks it, and names it (and the
// period, when it is about one).
func TestVerifyViolations(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Production)
		check  string
		period string
	}{
		{"twice", func(p *Production) {
			p.Log = append(p.Log, fence.LogEntry{Seq: 7, Name: "job", Token: 2, Period: key(3), Outcome: fence.Accepted, Highest: 2})
		}, "twice", key(3)},
		{"lost", func(p *Production) { p.Log = slices.Delete(p.Log, 1, 2) }, "lost", key(1)},
		{"pending accepted twice", func(p *Production) {
			for seq := int64(7); seq <= 8; seq++ {
				p.Log = append(p.Log, fence.LogEntry{Seq: seq, Name: "job", Token: 2, Period: key(4), Outcome: fence.Accepted, Highest: 2})
			}
		}, "twice", key(4)},
		{"skipped accepted", func(p *Production) { p.Ledger[1].State = store.Skipped }, "skipped", key(1)},
		{"refused not stale", func(p *Production) { p.Log[4].Token, p.Log[4].Highest = 2, 2 }, "refused", ""},
		{"fence accepted a lower token", func(p *Production) { p.Log[5].Token = 1 }, "fence", ""},
		{"fence accepted a token no term held", func(p *Production) { p.Log[5].Token = 7 }, "fence", ""},
		{"token not rising", func(p *Production) { p.Events[1].Token = 1 }, "token", ""},
		{"an event missing", func(p *Production) { p.Events[1].Seq = 3 }, "log", ""},
		{"events out of order", func(p *Production) { p.Events[0], p.Events[1] = p.Events[1], p.Events[0] }, "log", ""},
		{"ledger token no term's", func(p *Production) { p.Ledger[3].Token = 9 }, "token", key(3)},
		{"accepted period not in the ledger", func(p *Production) {
			p.Log = append(p.Log, fence.LogEntry{Seq: 7, Name: "job", Token: 2, Period: key(30), Outcome: fence.Accepted, Highest: 2})
		}, NotInLedger, key(30)},
		{"rows older than the ledger's oldest, no retention", func(p *Production) { p.Ledger = p.Ledger[2:] }, NotInLedger, key(1)},
		{"rows older than the ledger's oldest, more than the retention keeps", func(p *Production) {
			p.Ledger, p.Retention = p.Ledger[2:], schedule.Retention{Rows: 4, Age: 2 * time.Hour}
		}, NotInLedger, key(0)},
		{"ledger emptied", func(p *Production) { p.Ledger, p.Retention = nil, schedule.Retention{Age: time.Minute, Rows: 1} }, NotInLedger, key(3)},
		{"damaged ledger row", func(p *Production) { p.Ledger[4].State = "weird" }, DamagedRow, key(4)},
		{"record token beyond the log's", func(p *Production) { p.Record.Token = 1<<63 - 1 }, RecordCheck, ""},
		{"record holder not the log's", func(p *Production) { p.Record.Holder = "ghost" }, RecordCheck, ""},
		{"record damaged", func(p *Production) { p.Damaged = "lease -5s outside [1ms, 24h0m0s]" }, RecordCheck, ""},
		{"record missing", func(p *Production) { p.Record = nil }, RecordCheck, ""},
		{"record without a log", func(p *Production) { p.Events = nil }, RecordCheck, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := production()
			tt.edit(&p)
			rep := Verify(p)
			var found bool
			for _, v := range rep.Violations {
				if v.Check == tt.check && (tt.period == "" || strings.Contains(v.Detail, tt.period)) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want a %q violation naming %q; got %+v", tt.check, tt.period, rep.Violations)
			}
			if v := rep.Verdict(); !strings.HasPrefix(v, "VIOLATED: ") {
				t.Fatalf("verdict %q", v)
			}
		})
	}
}

// The range bounds the periods judged; a pruned ledger explains periods
// older than its oldest row; without a log nothing is judged.
func TestVerifyRangeAndRetention(t *testing.T) {
	p := production()
	p.From, p.To = t0.Add(time.Minute), t0.Add(3*time.Minute)
	rep := Verify(p)
	if !rep.OK() || len(rep.Periods) != 2 || rep.Periods[0].Period != key(1) || rep.Periods[1].Period != key(2) {
		t.Fatalf("--from/--to: %+v", rep)
	}
	p = production()
	p.Log = slices.Delete(p.Log, 1, 2) // P1 lost...
	p.From = t0.Add(2 * time.Minute)   // ...outside the range
	if rep := Verify(p); !rep.OK() {
		t.Fatalf("a lost period outside the range is judged: %+v", rep.Violations)
	}
	// P0 and P1 pruned: the retention explains them by the rows kept
	// newer (3), or by age; a retention that explains neither leaves
	// them missing (TestVerifyViolations).
	for _, ret := range []schedule.Retention{{Rows: 3}, {Age: 30 * time.Minute}, {Age: time.Minute, Rows: 100}} {
		p = production()
		p.Ledger, p.Retention = p.Ledger[2:], ret
		if rep := Verify(p); !rep.OK() || rep.Pruned != 2 || rep.Judged != 3 || rep.Verdict() != ExactlyOnce {
			t.Fatalf("pruned ledger, retention %v: %+v", ret, rep)
		}
	}
	p = production()
	p.Log, p.HasLog = nil, false
	if rep := Verify(p); !rep.OK() || rep.Periods[0].Verdict != "not judged" || rep.Verdict() != NotJudged {
		t.Fatalf("no log: %+v", rep)
	}
}

// A ledger emptied proves nothing and explains nothing: whatever the
// retention, every acceptance is a missing row; with the fence log
// emptied too, or a range that holds no period, nothing is judged, and
// the verdict says so, never "exactly once".
func TestVerifyNothingJudged(t *testing.T) {
	p := production()
	p.Ledger, p.Retention, p.Now = nil, schedule.Retention{Age: time.Minute, Rows: 1}, t0.Add(1000*time.Hour)
	if rep := Verify(p); rep.OK() || rep.Pruned != 0 {
		t.Fatalf("emptied ledger: %+v", rep)
	}
	p.Log = nil
	if rep := Verify(p); !rep.OK() || rep.Judged != 0 || rep.Verdict() != NothingJudged {
		t.Fatalf("emptied ledger and fence log: %+v, verdict %q", rep, rep.Verdict())
	}
	p = production()
	p.From = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if rep := Verify(p); !rep.OK() || rep.Judged != 0 || rep.Verdict() != NothingJudged {
		t.Fatalf("--from 2030: %+v, verdict %q", rep, rep.Verdict())
	}
}

// A fence database that keeps no log (LogMissing) judges no period, even
// with HasLog set, and its verdict names the fix, never "exactly once"
// nor the verdict of a missing --fence-db; a violation of the election
// log still wins.
func TestVerifyFenceKeepsNoLog(t *testing.T) {
	p := production()
	p.Log, p.LogMissing = nil, true
	rep := Verify(p)
	if !rep.OK() || rep.HasLog || !rep.LogMissing || rep.Judged != 0 || rep.Verdict() != NoFenceLog || rep.Periods[0].Verdict != "not judged" {
		t.Fatalf("a fence without a log: %+v, verdict %q", rep, rep.Verdict())
	}
	if !strings.Contains(NoFenceLog, "baton fence install --log") || strings.Contains(NoFenceLog, "\n") {
		t.Fatalf("NoFenceLog %q: want one line naming the fix", NoFenceLog)
	}
	p.Events[1].Token = 1
	if v := Verify(p).Verdict(); !strings.HasPrefix(v, "VIOLATED: ") {
		t.Fatalf("a token not rising, on a fence without a log: verdict %q", v)
	}
}
