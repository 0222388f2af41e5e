package model

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// measureRows are the lesson's measures in the order and with the labels of
// its measure table.
var measureRows = []struct {
	label string
	value func(Result) int
}{
	{"batches started", func(r Result) int { return r.Started }},
	{"batches missed", func(r Result) int { return r.Missed }},
	{"delayed start rounds", func(r Result) int { return r.DelayedRounds }},
	{"double-started batches", func(r Result) int { return r.DoubleStarts }},
	{"rejected by fencing", func(r Result) int { return r.Rejected }},
	{"two-leader rounds", func(r Result) int { return r.TwoLeaderRounds }},
	{"leaderless rounds", func(r Result) int { return r.LeaderlessRounds }},
	{"handover rounds", func(r Result) int { return r.HandoverRounds }},
}

// Measure is one of the lesson's measures: its label and its value in a
// Result.
type Measure struct {
	Label string
	Value int
}

// Measures returns r's measures with the lesson's labels, in the lesson's
// order, followed by the number of handovers.
func (r Result) Measures() []Measure {
	ms := make([]Measure, 0, len(measureRows)+1)
	for _, row := range measureRows {
		ms = append(ms, Measure{row.label, row.value(r)})
	}
	return append(ms, Measure{"handovers", r.Handovers})
}

// scanColumns are the measures of the lease scan table.
var scanColumns = []struct {
	head  string
	value func(Result) int
}{
	{"handover", func(r Result) int { return r.HandoverRounds }},
	{"leaderless", func(r Result) int { return r.LeaderlessRounds }},
	{"missed", func(r Result) int { return r.Missed }},
	{"2-leader", func(r Result) int { return r.TwoLeaderRounds }},
	{"double", func(r Result) int { return r.DoubleStarts }},
}

// MeasureBlock returns the lesson's first printed block for p: a line
// describing the setting, the measures of three runs (plain, with fencing,
// with fencing and a persistent trigger) and the lease scan over leases and
// outages (runs without fencing or persistent trigger). With DefaultParams,
// leases 2, 3, 5, 8 and outages 5, 2 it is the lesson's block byte for byte.
func MeasureBlock(p Params, leases, outages []int) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	plain := p
	plain.Fencing, plain.PersistentTrigger = false, false
	fenced := plain
	fenced.Fencing = true
	both := fenced
	both.PersistentTrigger = true
	points, err := Scan(plain, leases, outages)
	if err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %d rounds, lease %d, renewal %d; %s. End-of-day batch trigger: %s.\n\n",
		p.Nodes, p.Rounds, p.Lease, p.Renewal, outageText(p), triggerText(p.Triggers))

	cols := []struct {
		name string
		r    Result
	}{{"plain", Run(plain)}, {"fencing", Run(fenced)}, {"fencing+trigger", Run(both)}}
	fmt.Fprintf(&b, "%-24s", "measure")
	for _, c := range cols {
		fmt.Fprintf(&b, "%22s", c.name)
	}
	b.WriteByte('\n')
	for _, row := range measureRows {
		fmt.Fprintf(&b, "%-24s", row.label)
		for _, c := range cols {
			fmt.Fprintf(&b, "%22d", row.value(c.r))
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	writeScanTable(&b, points, leases, outages)
	return b.String(), nil
}

// ScanTable formats points, as returned by Scan(p, leases, outages), as the
// lesson's lease scan table: one row per lease, one group of columns per
// outage.
func ScanTable(points []ScanPoint, leases, outages []int) string {
	var b strings.Builder
	writeScanTable(&b, points, leases, outages)
	return b.String()
}

func writeScanTable(b *strings.Builder, points []ScanPoint, leases, outages []int) {
	b.WriteString("      ")
	for _, o := range outages {
		fmt.Fprintf(b, "%50s", outageLabel(o, outages))
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "%6s", "lease")
	for range outages {
		for _, c := range scanColumns {
			fmt.Fprintf(b, "%11s", c.head)
		}
	}
	b.WriteByte('\n')
	for i, lease := range leases {
		fmt.Fprintf(b, "%6d", lease)
		for j := range outages {
			k := i*len(outages) + j
			if k >= len(points) {
				break
			}
			for _, c := range scanColumns {
				fmt.Fprintf(b, "%11d", c.value(points[k].Result))
			}
		}
		b.WriteByte('\n')
	}
}

// outageLabel names an outage column group: the longest of several is
// "long", the shortest "short".
func outageLabel(o int, all []int) string {
	lo, hi := slicesMinMax(all)
	kind := "outage"
	switch {
	case lo == hi:
	case o == hi:
		kind = "long outage"
	case o == lo:
		kind = "short outage"
	}
	return fmt.Sprintf("%s (%d %s)", kind, o, plural(o, "round"))
}

func slicesMinMax(xs []int) (lo, hi int) {
	lo, hi = math.MaxInt, math.MinInt
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func outageText(p Params) string {
	switch p.Outage {
	case 0:
		return "the leader node stays reachable"
	case 1:
		return fmt.Sprintf("the leader node is unreachable in round %d", p.Start)
	}
	return fmt.Sprintf("the leader node is unreachable in rounds %d-%d", p.Start, satAdd(satAdd(p.Start, p.Outage), -1))
}

func triggerText(ts []int) string {
	switch len(ts) {
	case 0:
		return "none"
	case 1:
		return fmt.Sprintf("round %d", ts[0])
	}
	return "rounds " + joinInts(ts, ", ")
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}

// CostOptions are the inputs of CostBlock besides the model's parameters.
type CostOptions struct {
	// InvoiceLines is how many invoice lines one end-of-day batch writes.
	InvoiceLines int
	// HandoversPerYear lists the yearly handover counts to price, one table
	// row each (the lesson's assumption KK4).
	HandoversPerYear []int
	// LongLease is the lease of the last line's run.
	LongLease int
}

// DefaultCostOptions returns the lesson's numbers: 4000 invoice lines per
// batch, 6 and 12 handovers a year, a long lease of 8 rounds.
func DefaultCostOptions() CostOptions {
	return CostOptions{InvoiceLines: 4000, HandoversPerYear: []int{6, 12}, LongLease: 8}
}

// CostBlock returns the lesson's second printed block: the share of
// leaderless and of two-leader rounds in a plain run of p, turned into
// expected missed and double batches and invoice lines per year for each
// handover count, then the fenced run with a persistent trigger and the run
// with the long lease. With DefaultParams and DefaultCostOptions it is the
// lesson's block byte for byte, decimals rounded as the lesson's
// arithmetic rounds them.
func CostBlock(p Params, o CostOptions) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	switch {
	case o.InvoiceLines < 0:
		return "", &FieldError{Field: "invoice-lines", Got: strconv.Itoa(o.InvoiceLines), Want: "an integer of at least 0"}
	case len(o.HandoversPerYear) == 0:
		return "", &FieldError{Field: "handovers", Got: "empty", Want: "at least one handover count"}
	case o.LongLease < 1:
		return "", &FieldError{Field: "long-lease", Got: strconv.Itoa(o.LongLease), Want: "an integer of at least 1 round"}
	}
	for _, h := range o.HandoversPerYear {
		if h < 0 {
			return "", &FieldError{Field: "handovers", Got: joinInts(o.HandoversPerYear, ","), Want: "every count an integer of at least 0"}
		}
	}
	plainP := p
	plainP.Fencing, plainP.PersistentTrigger = false, false
	fencedP := plainP
	fencedP.Fencing, fencedP.PersistentTrigger = true, true
	longP := plainP
	longP.Lease = o.LongLease
	plain, fenced, long := Run(plainP), Run(fencedP), Run(longP)

	rounds := float64(p.Rounds)
	leaderless := float64(plain.LeaderlessRounds) / rounds
	twoLeader := float64(plain.TwoLeaderRounds) / rounds
	lines := float64(o.InvoiceLines)

	var b strings.Builder
	fmt.Fprintf(&b, "model window: leaderless %d/%d = %s, two-leader %d/%d = %s\n",
		plain.LeaderlessRounds, p.Rounds, toFixed(leaderless, 4),
		plain.TwoLeaderRounds, p.Rounds, toFixed(twoLeader, 4))
	fmt.Fprintf(&b, "one batch = %d invoice lines (K01, computed value)\n\n", o.InvoiceLines)
	fmt.Fprintf(&b, "%5s%21s%19s%18s%13s\n", "KK4", "missed batches/yr", "lines not produced", "double batches/yr", "double lines")
	for _, h := range o.HandoversPerYear {
		missed := float64(h) * leaderless
		double := float64(h) * twoLeader
		fmt.Fprintf(&b, "%5d%21s%19s%18s%13s\n", h,
			toFixed(missed, 2), toFixed(missed*lines, 0),
			toFixed(double, 2), toFixed(double*lines, 0))
	}
	fmt.Fprintf(&b, "\nwith fencing + persistent trigger: missed batches %d, double-started batches %d, delayed start %d rounds\n",
		fenced.Missed, fenced.DoubleStarts, fenced.DelayedRounds)
	fmt.Fprintf(&b, "with lease %d (long): handover rounds %d, leaderless rounds %d, two-leader rounds %d\n",
		o.LongLease, long.HandoverRounds, long.LeaderlessRounds, long.TwoLeaderRounds)
	return b.String(), nil
}

// toFixed formats x with digits decimals the way the lesson's arithmetic
// does: from the exact binary value, a tie rounded away from zero (Go's
// formatting rounds a tie to even, which differs for values like 0.125).
// Magnitudes of 1e21 and above fall back to exponent form.
func toFixed(x float64, digits int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1e21 {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	r := new(big.Rat).SetFloat64(x)
	r.Mul(r, new(big.Rat).SetInt(scale))
	r.Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // floor: both are positive
	s := n.String()
	if digits == 0 {
		return sign + s
	}
	if len(s) <= digits {
		s = strings.Repeat("0", digits-len(s)+1) + s
	}
	return sign + s[:len(s)-digits] + "." + s[len(s)-digits:]
}
