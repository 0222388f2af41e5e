package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Production is what a deployment keeps of one name, for Verify: its
// election log, its run ledger and its fence log (fence.Dialect.WithLog).
type Production struct {
	Name string
	// Events is the election log of Name, in Seq order.
	Events []store.Event
	// Ledger is the run ledger of Name, in any order.
	Ledger []store.Run
	// Log is the fence log of Name, in Seq order; HasLog says whether
	// there is one (without it, the periods are not judged).
	Log    []fence.LogEntry
	HasLog bool
	// LogMissing says that the fence's database was read and keeps no
	// fence log (its table is missing: a fence opened without WithLog,
	// or installed without `baton fence install --log`); HasLog is then
	// false, and the verdict NoFenceLog.
	LogMissing bool
	// From and To bound the periods judged by their scheduled instant:
	// From <= scheduled < To; a zero bound is open. The terms and the
	// tokens are checked over the whole logs.
	From, To time.Time
	// Retention is the retention the ledger of Name is pruned by (the
	// tightest of the leaders' and of 'baton prune'), and Now the wall
	// time of the check: an accepted period the ledger does not have is
	// counted as pruned, and not judged, only when they explain it (see
	// Verify). The zero Retention explains nothing.
	Retention schedule.Retention
	Now       time.Time
	// Record is the election record of Name as the store returns it (nil:
	// there is none), and Damaged why it is damaged by the rule every
	// view uses (inspect.State.Damaged: a held record's lease out of
	// bounds, a token with no room for the next), "" when it is not.
	Record  *store.Record
	Damaged string
}

// Period states as Verify reports them, beside the ledger's own.
const (
	// NotInLedger: a period the fence log accepted that the ledger does
	// not have, and whose absence the ledger's retention does not
	// explain: its row is missing.
	NotInLedger = "not-in-ledger"
	// DamagedRow: a ledger row in a state that is none of
	// store.RunStates (store.CheckRunState).
	DamagedRow = "damaged-row"
	// RecordCheck names the violations of the election record against
	// its log: damaged, or not what the log's last event left.
	RecordCheck = "record"
)

// PeriodRow is one line of Verify's per-period table.
type PeriodRow struct {
	Period    string    `json:"period"`
	Scheduled time.Time `json:"scheduled"`
	// State is the ledger's state of the period, or NotInLedger.
	State string `json:"state"`
	// LedgerToken is the token of the ledger row's last attempt.
	LedgerToken uint64 `json:"ledger_token,omitempty"`
	// Accepted lists the tokens the fence accepted for the period, in
	// the fence's order; Refused those it refused (all stale, or a
	// violation says otherwise).
	Accepted []uint64 `json:"accepted"`
	Refused  []uint64 `json:"refused"`
	// Verdict is "exactly once", "at most once" (a period not finished,
	// or failed, with no acceptance or one), "skipped", or the check
	// that failed ("lost", "twice", ...).
	Verdict string `json:"verdict"`
}

// Report is what Verify found for one name.
type Report struct {
	Name string `json:"name"`
	// Terms counts the terms in the election log.
	Terms int `json:"terms"`
	// Accepted and Refused count the fence log's rows (all of them, not
	// only the periods in range).
	Accepted int `json:"accepted"`
	Refused  int `json:"refused"`
	// Pruned counts the accepted periods in range that the ledger no
	// longer has and whose absence its retention explains: pruned, not
	// judged.
	Pruned int `json:"pruned"`
	// Judged counts the periods judged (with a fence log: every period
	// of the ledger in range, and every accepted one it is missing). A
	// report with a fence log that judged none proves nothing: Verdict
	// says "nothing judged".
	Judged int `json:"judged"`
	// HasLog says whether a fence log was read; LogMissing that the
	// fence database was read and keeps none.
	HasLog     bool        `json:"fence_log"`
	LogMissing bool        `json:"fence_log_missing,omitempty"`
	Periods    []PeriodRow `json:"periods"`
	Violations []Violation `json:"violations"`
}

// OK reports whether Verify found no violation.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Verdicts of a Report (Verdict).
const (
	// ExactlyOnce: no violation, and at least one period judged.
	ExactlyOnce = "exactly once"
	// NothingJudged: no violation, and no period judged: nothing proven.
	NothingJudged = "nothing judged"
	// NotJudged: no violation; without a fence log the periods are not
	// judged.
	NotJudged = "terms and tokens consistent; periods not judged (no --fence-db)"
	// NoFenceLog: no violation; the fence database keeps no fence log,
	// so the periods are not judged. It names the fix.
	NoFenceLog = "periods not judged: the fence keeps no log (--fence-db has no fence log table); keep one: baton fence install --log, or fence.Dialect.WithLog in Go"
)

// Verdict is the report's verdict: "VIOLATED: N violations",
// ExactlyOnce, NothingJudged, NoFenceLog or NotJudged. "exactly once"
// needs a judged period.
func (r Report) Verdict() string {
	switch {
	case len(r.Violations) == 1:
		return "VIOLATED: 1 violation"
	case len(r.Violations) > 1:
		return fmt.Sprintf("VIOLATED: %d violations", len(r.Violations))
	case r.LogMissing:
		return NoFenceLog
	case !r.HasLog:
		return NotJudged
	case r.Judged == 0:
		return NothingJudged
	}
	return ExactlyOnce
}

// starts reports whether an election log event begins a term.
func starts(k store.EventKind) bool {
	return k == store.Acquired || k == store.TakenOver || k == store.Transferred
}

// Verify checks what a deployment recorded of one name, with the rules
// Check applies to a test cluster's histories (sharing their code), as far
// as the production records carry them. They carry no belief intervals on
// a common clock, so Check's overlap of Valid intervals and its porcupine
// check have no counterpart here; the fence log's own order stands in
// for the second:
//   - the election log has no event missing (its Seq rises by one), so
//     its terms, each from its event to the next one, do not overlap
//     ("log"); a token has one holder whose tokens rise ("token");
//   - every term's token is above every token before it in the log
//     ("token");
//   - the fence accepted tokens in rising order, each one a term's
//     ("fence");
//   - every refused write had a stale token: the fence held a higher one
//     ("refused");
//   - every done period in range was accepted exactly once ("lost",
//     "twice"); a failed, pending or running one at most once ("twice");
//     a skipped one never ("skipped"); the ledger's token of a period is
//     a term's ("token"); an accepted period is in the ledger, or its
//     absence is explained by the ledger's retention ("not-in-ledger"):
//     the retention's own rule (schedule.Retention.Prune) at Now deletes
//     it, by age or by the rows the ledger keeps newer than it, and the
//     ledger has a newer row (a prune never deletes the newest scheduled
//     row, so an emptied ledger explains nothing);
//   - the election record is what the log's last event left: its token
//     and holder (every event carries the record's after the change),
//     and it is not damaged by the rule every view uses ("record").
//
// A report that judged no period (Judged 0) proves nothing: its Verdict
// is "nothing judged", never "exactly once".
//
// What it cannot see: fenced writes made without the log, and refusals
// not logged (fence.LogRefusal is best effort). Without a fence log
// (HasLog false) only the election log and the ledger's tokens are
// checked.
func Verify(p Production) Report {
	rep := Report{Name: p.Name, HasLog: p.HasLog && !p.LogMissing, LogMissing: p.LogMissing}
	p.HasLog = rep.HasLog
	add := func(check, format string, a ...any) {
		rep.Violations = append(rep.Violations, Violation{check, fmt.Sprintf(format, a...)})
	}

	// The terms, as Elected records of the whole election log, in its
	// order. The log's times are the writers' clocks, for people: on a
	// store whose nodes' clocks differ, a takeover can be dated before
	// the acquisition it follows, so the terms are ordered, and judged,
	// by Seq. A term runs from its event to the next event that ends it;
	// with no event missing, no two terms overlap.
	var elections []Record
	issued := map[uint64]string{} // token -> holder
	var highest uint64            // highest token in the log so far
	for i, ev := range p.Events {
		if i > 0 && ev.Seq != p.Events[i-1].Seq+1 {
			add("log", "%s: the election log goes from seq %d to %d: an event is missing or out of order, so a term may be hidden", p.Name, p.Events[i-1].Seq, ev.Seq)
		}
		if ev.Kind == store.FloorRaised {
			highest = max(highest, ev.Token)
		}
		if !starts(ev.Kind) || ev.Holder == "" {
			// A transferred event without a holder is the release
			// towards the target ('baton transfer', a preference's
			// handover): it ends a term; the target's take follows,
			// with token + 1.
			continue
		}
		if ev.Token <= highest {
			add("token", "%s: seq %d (%s by %s) has token %d, not above %d before it", p.Name, ev.Seq, ev.Kind, ev.Holder, ev.Token, highest)
		}
		highest = max(highest, ev.Token)
		holder := ev.Holder + "#" + ev.Incarnation
		issued[ev.Token] = holder
		elections = append(elections, Record{Kind: Elected, Name: p.Name, Holder: holder, Token: ev.Token, At: int64(ev.Seq)})
	}
	rep.Terms = len(elections)
	rep.Violations = append(rep.Violations, tokens(elections)...)
	checkRecord(p, add)

	// The ledger, in period order.
	ledger := slices.Clone(p.Ledger)
	slices.SortFunc(ledger, func(a, b store.Run) int { return cmp.Compare(a.Period, b.Period) })
	for _, r := range ledger {
		if _, ok := issued[r.Token]; r.Token != 0 && !ok {
			add("token", "period %s: the ledger's token %d is no term of %s in the election log", r.Period, r.Token, p.Name)
		}
	}
	if !p.HasLog {
		for _, r := range ledger {
			if inRange(p, r.Scheduled) {
				rep.Periods = append(rep.Periods, PeriodRow{Period: r.Period, Scheduled: r.Scheduled, State: string(r.State), LedgerToken: r.Token, Verdict: "not judged"})
			}
		}
		return rep
	}

	// The fence log: accepted tokens rise and are terms'; refusals stale.
	var writes []Record
	refused := map[string][]uint64{}
	var high uint64 // highest accepted so far, in the fence's order
	for _, e := range p.Log {
		w := Record{Kind: Write, Name: e.Name, Holder: issued[e.Token], Token: e.Token, Period: e.Period, Accepted: e.Outcome == fence.Accepted}
		switch e.Outcome {
		case fence.Accepted:
			rep.Accepted++
			if e.Token < high {
				add("fence", "%s: the fence accepted token %d (log seq %d, period %q) after token %d", p.Name, e.Token, e.Seq, e.Period, high)
			}
			high = max(high, e.Token)
			if _, ok := issued[e.Token]; !ok {
				add("fence", "%s: the fence accepted token %d (log seq %d, period %q), which no term in the election log held", p.Name, e.Token, e.Seq, e.Period)
			}
		case fence.Refused:
			rep.Refused++
			if !(e.Token < e.Highest || (e.Highest == 0 && e.Token < high)) {
				add("refused", "%s: the fence refused token %d (log seq %d, period %q) holding %d: not a stale token", p.Name, e.Token, e.Seq, e.Period, max(e.Highest, high))
			}
			if e.Period != "" {
				refused[e.Period] = append(refused[e.Period], e.Token)
			}
		default:
			add("fence", "%s: log seq %d has outcome %q, want %s or %s", p.Name, e.Seq, e.Outcome, fence.Accepted, fence.Refused)
		}
		writes = append(writes, w)
	}
	accepted := acceptedByPeriod(writes)

	// The periods.
	inLedger := map[string]bool{}
	for _, r := range ledger {
		inLedger[r.Period] = true
		if !inRange(p, r.Scheduled) {
			continue
		}
		row := PeriodRow{Period: r.Period, Scheduled: r.Scheduled, State: string(r.State), LedgerToken: r.Token,
			Accepted: tokensOf(accepted[r.Period]), Refused: refused[r.Period]}
		ws := accepted[r.Period]
		switch r.State {
		case store.Done:
			row.Verdict = "exactly once"
			if v, bad := exactlyOnce(r.Period, ws, true); bad {
				row.Verdict, rep.Violations = v.Check, append(rep.Violations, v)
			}
		case store.Skipped:
			row.Verdict = "skipped"
			if len(ws) > 0 {
				row.Verdict = "skipped, accepted"
				add("skipped", "period %s: skipped in the ledger, yet accepted %d times", r.Period, len(ws))
			}
		case store.Pending, store.Running, store.Failed:
			row.Verdict = "at most once"
			if v, bad := exactlyOnce(r.Period, ws, false); bad {
				row.Verdict, rep.Violations = v.Check, append(rep.Violations, v)
			}
		default:
			// The stores refuse such a row; a row handed over anyway
			// is judged nothing: whether its period ran is unknown.
			row.Verdict = DamagedRow
			add(DamagedRow, "%v", store.CheckRunState(r.Job, r.Period, r.State))
		}
		rep.Periods = append(rep.Periods, row)
	}
	prune := p.Retention.Prune(p.Name, p.Now, nil, 1) // the retention's own bounds at Now
	for _, key := range sortedKeys(accepted) {
		if inLedger[key] {
			continue
		}
		due, _ := schedule.ParseKey(key)
		if !inRange(p, due) {
			continue
		}
		// The rows the ledger keeps newer than key: a prune deletes
		// oldest first and never the newest scheduled row.
		newer := len(ledger) - sort.Search(len(ledger), func(i int) bool { return ledger[i].Period > key })
		if newer > 0 && ((prune.Before != "" && key < prune.Before) || (prune.Keep > 0 && newer >= prune.Keep)) {
			rep.Pruned++
			continue
		}
		rep.Periods = append(rep.Periods, PeriodRow{Period: key, Scheduled: due, State: NotInLedger,
			Accepted: tokensOf(accepted[key]), Refused: refused[key], Verdict: NotInLedger})
		why := "the ledger is empty, and a prune never deletes its newest row"
		if newer > 0 {
			why = fmt.Sprintf("the retention (%s) does not explain it: %d newer rows, due %s", p.Retention, newer, due.UTC().Format(time.RFC3339))
		}
		add(NotInLedger, "period %s: accepted %d times, and the ledger has no such period (%s): its row is missing", key, len(accepted[key]), why)
	}
	slices.SortStableFunc(rep.Periods, func(a, b PeriodRow) int { return cmp.Compare(a.Period, b.Period) })
	rep.Judged = len(rep.Periods)
	return rep
}

// checkRecord checks the election record of p against its log: the log's
// last event carries the record's token, holder and incarnation after the
// change it records (renewals change none of them and log nothing), so
// the record must still have them; and it must not be damaged.
func checkRecord(p Production, add func(check, format string, a ...any)) {
	if p.Damaged != "" {
		add(RecordCheck, "%s: the election record is damaged: %s (fix or delete the record)", p.Name, p.Damaged)
	}
	rec := p.Record
	if len(p.Events) == 0 {
		if rec != nil && (rec.Token != 0 || !rec.Free()) {
			add(RecordCheck, "%s: the election record (holder %q, token %d) has no event in the election log", p.Name, rec.Holder, rec.Token)
		}
		return
	}
	last := p.Events[len(p.Events)-1]
	if rec == nil {
		add(RecordCheck, "%s: the election log ends at seq %d (token %d), and the store has no election record", p.Name, last.Seq, last.Token)
		return
	}
	if rec.Token != last.Token {
		add(RecordCheck, "%s: the election record holds token %d, the log's last event (seq %d, %s) token %d", p.Name, rec.Token, last.Seq, last.Kind, last.Token)
	}
	if rec.Holder != last.Holder || rec.Incarnation != last.Incarnation {
		add(RecordCheck, "%s: the election record is held by %q (incarnation %q), the log's last event (seq %d, %s) left %q (incarnation %q)",
			p.Name, rec.Holder, rec.Incarnation, last.Seq, last.Kind, last.Holder, last.Incarnation)
	}
}

// inRange reports whether t is within p's From and To.
func inRange(p Production, t time.Time) bool {
	return (p.From.IsZero() || !t.Before(p.From)) && (p.To.IsZero() || t.Before(p.To))
}

func tokensOf(ws []Record) []uint64 {
	var out []uint64
	for _, w := range ws {
		out = append(out, w.Token)
	}
	return out
}
