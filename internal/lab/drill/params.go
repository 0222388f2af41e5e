package drill

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Fault is what happens to the first leader during the outage.
type Fault string

// The faults.
const (
	// Unreachable: the node's store calls fail; it keeps running.
	Unreachable Fault = "unreachable"
	// Pause: the node is frozen (no code of it runs) and resumes after the
	// outage, like a process under SIGSTOP or a long GC pause.
	Pause Fault = "pause"
	// PauseBeforeEffect: the node is frozen between its last Valid() check
	// and its write, and resumes after the outage to write with its old
	// token: the case only fencing stops.
	PauseBeforeEffect Fault = "pause-before-effect"
	// Crash: the node is killed and restarts after the outage as a new
	// incarnation.
	Crash Fault = "crash"
	// Drift: the node's clock runs fast by Params.DriftRate.
	Drift Fault = "drift"
)

// Faults lists every fault, in the order "--fault all" runs them.
var Faults = []Fault{Unreachable, Pause, PauseBeforeEffect, Crash, Drift}

// ParseFault parses a fault name: one of Faults, or of NetFaults (net
// mode only).
func ParseFault(s string) (Fault, error) {
	all := append(slices.Clone(Faults), NetFaults...)
	for _, f := range all {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown fault %q: want %s or all (the last %d with --net only)", s, strings.Join(names, ", "), len(NetFaults))
}

// Column is one layer of protection, as in the lesson's table.
type Column string

// The columns.
const (
	// Plain: election only; a trigger is a moment, work is not fenced.
	Plain Column = "plain"
	// Fencing: every write carries the term's token and the resource
	// refuses stale ones; a new leader raises the fence before it acts.
	Fencing Column = "fencing"
	// FencingTrigger: fencing, and every scheduled batch is a durable
	// period in the run ledger that the next leader runs if nobody could.
	FencingTrigger Column = "fencing+trigger"
)

// Columns lists the columns in table order.
var Columns = []Column{Plain, Fencing, FencingTrigger}

// Params is one drill scenario. Durations in rounds are whole rounds of
// length Round, like the lesson's.
type Params struct {
	Nodes        int           `json:"nodes"`
	Round        time.Duration `json:"-"`
	Lease        int           `json:"lease"`  // rounds
	Renew        int           `json:"renew"`  // rounds
	Outage       int           `json:"outage"` // rounds
	Start        int           `json:"start"`  // first faulted round
	Triggers     []int         `json:"triggers"`
	Rounds       int           `json:"rounds"`
	Margin       time.Duration `json:"-"` // clock uncertainty e
	Poll         time.Duration `json:"-"` // contender poll; 0: Round/4
	InvoiceLines int           `json:"invoiceLines"`
	Fault        Fault         `json:"fault"`
	DriftRate    float64       `json:"driftRate"` // Drift: the clock runs 1+DriftRate times as fast
	Latency      time.Duration `json:"-"`         // one-way store latency
}

// DefaultParams returns the lesson's scenario: 5 nodes, rounds of 100ms, a
// lease of 3 rounds renewed every round, the first leader unreachable in
// rounds 6-10, batches due at rounds 6, 12, 18 and 24, 4,000 invoice lines
// a batch.
func DefaultParams() Params {
	return Params{
		Nodes: 5, Round: 100 * time.Millisecond, Lease: 3, Renew: 1, Outage: 5, Start: 6,
		Triggers: []int{6, 12, 18, 24}, Rounds: 24, Margin: 10 * time.Millisecond,
		InvoiceLines: 4000, Fault: Unreachable, DriftRate: 0.5, Latency: time.Millisecond,
	}
}

// Validate returns an error naming the first invalid field.
func (p Params) Validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	check(p.Nodes >= 2 && p.Nodes <= 100, "nodes must be from 2 to 100, got %d", p.Nodes)
	check(p.Round >= time.Millisecond, "round must be at least 1ms, got %v", p.Round)
	check(p.Lease >= 1, "lease must be at least 1 round, got %d", p.Lease)
	check(p.Renew >= 1 && p.Renew < p.Lease, "renew must be at least 1 round and fewer than the lease (%d), got %d", p.Lease, p.Renew)
	check(p.Outage >= 0, "outage must not be negative, got %d", p.Outage)
	check(p.Start >= 1, "start must be at least round 1, got %d", p.Start)
	check(p.Rounds >= 1 && p.Rounds <= 10000, "rounds must be from 1 to 10000, got %d", p.Rounds)
	check(p.Margin >= 0, "clock margin must not be negative, got %v", p.Margin)
	check(p.Poll >= 0, "poll must not be negative, got %v", p.Poll)
	check(p.InvoiceLines >= 1 && p.InvoiceLines <= 1_000_000, "invoice lines must be from 1 to 1000000, got %d", p.InvoiceLines)
	check(p.DriftRate > -1 && p.DriftRate <= 100, "drift rate must be above -1 (a clock must run forward), got %v", p.DriftRate)
	check(p.Latency >= 0 && p.Latency < p.Round, "latency must be from 0 to below a round, got %v", p.Latency)
	if _, err := ParseFault(string(p.Fault)); err != nil {
		errs = append(errs, err)
	}
	for _, t := range p.Triggers {
		check(t >= 1 && t <= p.Rounds, "trigger round %d is outside rounds 1-%d", t, p.Rounds)
	}
	sorted := slices.Clone(p.Triggers)
	slices.Sort(sorted)
	check(len(slices.Compact(sorted)) == len(p.Triggers), "trigger rounds must be distinct, got %v", p.Triggers)
	return errors.Join(errs...)
}

func (p Params) poll() time.Duration {
	if p.Poll > 0 {
		return p.Poll
	}
	return p.Round / 4
}

// MarshalJSON writes durations in seconds, as every --json output does
// ("roundSeconds": 0.1).
func (p Params) MarshalJSON() ([]byte, error) {
	type plain Params
	return json.Marshal(struct {
		plain
		Round   float64 `json:"roundSeconds"`
		Margin  float64 `json:"clockMarginSeconds"`
		Poll    float64 `json:"pollSeconds"`
		Latency float64 `json:"latencySeconds"`
	}{plain(p), p.Round.Seconds(), p.Margin.Seconds(), p.poll().Seconds(), p.Latency.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes, so that a program can judge
// the report of `baton drill --json` (Report's checks) from its output.
// The poll read back is the one the drill used (Round/4 when none was
// given).
func (p *Params) UnmarshalJSON(b []byte) error {
	type plain Params
	var v struct {
		plain
		Round   float64 `json:"roundSeconds"`
		Margin  float64 `json:"clockMarginSeconds"`
		Poll    float64 `json:"pollSeconds"`
		Latency float64 `json:"latencySeconds"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	sec := func(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
	*p = Params(v.plain)
	p.Round, p.Margin, p.Poll, p.Latency = sec(v.Round), sec(v.Margin), sec(v.Poll), sec(v.Latency)
	return nil
}
