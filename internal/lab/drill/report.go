package drill

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/internal/lab/model"
)

// Report is one fault's drill: its parameters and the three columns.
type Report struct {
	Fault   Fault             `json:"fault"`
	Params  Params            `json:"params"`
	Columns map[Column]Result `json:"columns"`
	// Model is the lesson's round model for the same parameters, per
	// column, for comparison.
	Model map[Column]model.Result `json:"model"`
	// Timelines is what each node did and suffered in each column, in
	// order, for drawing (see WriteHTML). Only the virtual-clock drill
	// records them.
	Timelines map[Column][]Event `json:"timelines,omitempty"`
}

// RunAll runs every column of p and the lesson's model beside them.
func RunAll(ctx context.Context, p Params, cfg Config) (Report, error) {
	rep := Report{Fault: p.Fault, Params: p, Columns: map[Column]Result{}, Model: map[Column]model.Result{}}
	for _, c := range Columns {
		r, tl, err := run(ctx, p, c, cfg)
		if err != nil {
			return rep, fmt.Errorf("drill %s, column %s: %w", p.Fault, c, err)
		}
		rep.Columns[c] = r
		if tl != nil {
			if rep.Timelines == nil {
				rep.Timelines = map[Column][]Event{}
			}
			rep.Timelines[c] = tl
		}
		mp := model.Params{Nodes: p.Nodes, Lease: p.Lease, Renewal: p.Renew, Outage: p.Outage,
			Start: p.Start, Triggers: p.Triggers, Rounds: p.Rounds,
			Fencing: c != Plain, PersistentTrigger: c == FencingTrigger}
		rep.Model[c] = model.Run(mp)
	}
	return rep, nil
}

var faultText = map[Fault]string{
	Unreachable:       "cannot reach the store",
	Pause:             "is frozen (like SIGSTOP)",
	PauseBeforeEffect: "is frozen between its Valid() check and its write",
	Crash:             "is killed and restarts after the outage",
	Drift:             "has a clock running fast",
	Partition:         "is partitioned with a minority of the store's members",
	Isolate:           "is cut off from every store host",
	OneWayContenders:  "can reach the store while the other nodes cannot",
	OneWayLeader:      "cannot reach the store while the other nodes can",
	Flap:              "has its link flapping every lease/2",
	Loss:              "and the store hosts lose 30% of the packets they receive",
	MemberKill:        "sees a store member killed and restarted after the outage",
}

// Table renders the report laid out like the lesson's table: the real
// measure with the lesson's model for the same parameters in parentheses,
// then measured times and the invoice lines counted from the data.
func (r Report) Table() string {
	p := r.Params
	var b strings.Builder
	trig := make([]string, len(p.Triggers))
	for i, t := range p.Triggers {
		trig[i] = strconv.Itoa(t)
	}
	what := faultText[p.Fault]
	if p.Fault == Drift {
		what = fmt.Sprintf("has a clock running %.0f%% fast", p.DriftRate*100)
	}
	fmt.Fprintf(&b, "%d nodes, %d rounds of %v, lease %d rounds, renewal every %d, clock margin %v; the first leader %s in rounds %d-%d. End-of-day batch (%d invoice lines) due at rounds %s.\n\n",
		p.Nodes, p.Rounds, p.Round, p.Lease, p.Renew, p.Margin, what, p.Start, p.Start+p.Outage-1, p.InvoiceLines, strings.Join(trig, ", "))
	fmt.Fprintf(&b, "%-28s", "measure (lesson's model)")
	for _, c := range Columns {
		fmt.Fprintf(&b, "%22s", c)
	}
	b.WriteString("\n")
	rows := tableRows()
	for _, row := range rows {
		fmt.Fprintf(&b, "%-28s", row.label)
		for _, c := range Columns {
			fmt.Fprintf(&b, "%22s", fmt.Sprintf("%d (%d)", row.real(r.Columns[c]), row.model(r.Model[c])))
		}
		b.WriteString("\n")
	}
	secs := []struct {
		label string
		v     func(Result) float64
	}{
		{"handover seconds", func(x Result) float64 { return x.HandoverSeconds }},
		{"leaderless seconds", func(x Result) float64 { return x.LeaderlessSeconds }},
		{"two running leaders seconds", func(x Result) float64 { return x.TwoLeaderSeconds }},
	}
	for _, row := range secs {
		fmt.Fprintf(&b, "%-28s", row.label)
		for _, c := range Columns {
			fmt.Fprintf(&b, "%22s", strconv.FormatFloat(row.v(r.Columns[c]), 'f', 3, 64))
		}
		b.WriteString("\n")
	}
	for _, row := range []struct {
		label string
		v     func(Result) int
	}{
		{"duplicate invoice lines", func(x Result) int { return x.DuplicateLines }},
		{"missing invoice lines", func(x Result) int { return x.MissingLines }},
		{"batches pending at the end", func(x Result) int { return x.PendingAtEnd }},
		{"history checker violations", func(x Result) int {
			if x.History == nil {
				return 0
			}
			return len(x.History.Violations)
		}},
	} {
		if row.label == "batches pending at the end" && !anyPending(r) {
			continue // only a process mode on a loaded machine has one
		}
		if row.label == "history checker violations" && r.Columns[Plain].History == nil {
			continue // net mode only
		}
		fmt.Fprintf(&b, "%-28s", row.label)
		for _, c := range Columns {
			fmt.Fprintf(&b, "%22d", row.v(r.Columns[c]))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// tableRow is one of the lesson's measures: its name in Result's JSON, its
// label, and how to read it from a drill Result and from the model.
type tableRow struct {
	key, label string
	real       func(Result) int
	model      func(model.Result) int
}

func tableRows() []tableRow {
	return []tableRow{
		{"started", "batches started", func(x Result) int { return x.Started }, func(x model.Result) int { return x.Started }},
		{"missed", "batches missed", func(x Result) int { return x.Missed }, func(x model.Result) int { return x.Missed }},
		{"delayedRounds", "delayed start rounds", func(x Result) int { return x.DelayedRounds }, func(x model.Result) int { return x.DelayedRounds }},
		{"doubleStarts", "double-started batches", func(x Result) int { return x.DoubleStarts }, func(x model.Result) int { return x.DoubleStarts }},
		{"rejected", "rejected by fencing", func(x Result) int { return x.Rejected }, func(x model.Result) int { return x.Rejected }},
		{"twoLeaderRounds", "two-leader rounds", func(x Result) int { return x.TwoLeaderRounds }, func(x model.Result) int { return x.TwoLeaderRounds }},
		{"leaderlessRounds", "leaderless rounds", func(x Result) int { return x.LeaderlessRounds }, func(x model.Result) int { return x.LeaderlessRounds }},
		{"handoverRounds", "handover rounds", func(x Result) int { return x.HandoverRounds }, func(x model.Result) int { return x.HandoverRounds }},
	}
}

// Legend explains the columns of a drill table and the figures in
// brackets, for a reader who never saw the lesson.
const Legend = `Columns: plain = election alone: a batch trigger is a moment in memory and writes carry no token;
fencing = every write carries the term's fencing token and the resource refuses a stale one;
fencing+trigger = fencing, and every batch is a durable period that the next leader runs.
Figures: "4 (3)" is 4 measured on baton's real code and 3 from the lesson's round model for the
same parameters; the times and invoice lines are measured only.`

// Verdicts returns one line per column: what it lost and what it doubled,
// counted from the invoice lines written, what the fence refused and how
// late the batches started.
func (r Report) Verdicts() string {
	var b strings.Builder
	for _, c := range Columns {
		x := r.Columns[c]
		lost, doubled := "nothing", "nothing"
		if x.Missed > 0 || x.MissingLines > 0 {
			lost = fmt.Sprintf("%s (%d invoice lines)", plural(x.Missed, "batch", "batches"), x.MissingLines)
		}
		if x.DoubleStarts > 0 || x.DuplicateLines > 0 {
			doubled = fmt.Sprintf("%s (%d invoice lines)", plural(x.DoubleStarts, "batch", "batches"), x.DuplicateLines)
		}
		fmt.Fprintf(&b, "  %-16s lost %s, doubled %s", c, lost, doubled)
		if x.PendingAtEnd > 0 {
			fmt.Fprintf(&b, "; %s pending at the end (still in the run ledger, not lost)", plural(x.PendingAtEnd, "batch", "batches"))
		}
		if x.Rejected > 0 {
			fmt.Fprintf(&b, "; the fence refused %s", plural(x.Rejected, "stale write", "stale writes"))
		}
		if x.DelayedRounds > 0 {
			fmt.Fprintf(&b, "; batches started %s late in all", plural(x.DelayedRounds, "round", "rounds"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// anyPending reports whether a column ended with a batch still pending in
// the ledger.
func anyPending(r Report) bool {
	for _, c := range Columns {
		if r.Columns[c].PendingAtEnd > 0 {
			return true
		}
	}
	return false
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
