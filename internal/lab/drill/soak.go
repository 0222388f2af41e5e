package drill

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/history"
)

// SoakParams is a seeded randomized soak in net mode: the fencing+trigger
// column on real hosts for Duration, with a batch due every other round
// and a schedule of faults drawn from Seed, each on the node that leads
// when it begins, one after another with healed rounds between them. The
// same Seed always draws the same schedule; the run itself is real time.
type SoakParams struct {
	Duration time.Duration
	Seed     uint64
	// Round, Lease, Renew and Margin as in Params.
	Round  time.Duration
	Lease  int
	Renew  int
	Margin time.Duration
	// SkewRate is the clock rate change of the skew fault: a host whose
	// clock runs 1+SkewRate times as fast.
	SkewRate float64
	// Faults are the classes to draw from; nil: SoakFaults.
	Faults []Fault
}

// DefaultSoakParams returns a soak of d from seed: rounds of 200ms, a
// lease of 3 rounds renewed every round, a clock margin of 25ms, and a
// skewed host 3% slow (which the margin covers: 600ms / 0.97 is less
// than 600ms + 2 x 25ms).
func DefaultSoakParams(d time.Duration, seed uint64) SoakParams {
	return SoakParams{Duration: d, Seed: seed, Round: 200 * time.Millisecond, Lease: 3, Renew: 1,
		Margin: 25 * time.Millisecond, SkewRate: -0.03}
}

// Skew is the soak's fault of a host whose clock runs slow (SkewRate)
// and that is cut off from the store from the fault's second round on: a
// leader that believes its lease longer than its contenders wait before
// they take over. The clock margin must cover the skew.
const Skew Fault = "skew"

// SoakFaults lists every fault class a soak draws from.
var SoakFaults = append(append([]Fault{}, Faults...), append(slices.Clone(NetFaults), Skew)...)

// SoakResult is one soak schedule's outcome.
type SoakResult struct {
	Seed     uint64    `json:"seed"`
	Store    string    `json:"store"`
	Episodes []Episode `json:"faults"`
	Result   Result    `json:"result"`
	Seconds  float64   `json:"seconds"`
}

// Classes returns the distinct fault classes of the schedule.
func (r SoakResult) Classes() []Fault {
	var out []Fault
	for _, e := range r.Episodes {
		if !slices.Contains(out, e.Fault) {
			out = append(out, e.Fault)
		}
	}
	return out
}

func (sp SoakParams) params() Params {
	p := DefaultParams()
	p.Round, p.Lease, p.Renew, p.Margin, p.InvoiceLines = sp.Round, sp.Lease, sp.Renew, sp.Margin, 100
	p.Rounds = int(min(sp.Duration/max(p.Round, time.Millisecond), 1_000_000))
	p.Triggers = nil
	for r := 2; r <= p.Rounds-2; r += 2 {
		p.Triggers = append(p.Triggers, r)
	}
	p.Outage, p.Start, p.Fault = 0, 1, Unreachable
	return p
}

// schedule draws the soak's faults from its seed: every class in a
// seeded order, again and again, each for 2 to 6 rounds (a pause or a
// crash for longer than the lease, a pause before effect for the lease
// and 4 rounds), with 2 to 4 healed rounds after it; the last 6 rounds
// stay healed.
func (sp SoakParams) schedule(p Params) []Episode {
	rng := rand.New(rand.NewPCG(sp.Seed, 0x6261746f6e)) // "baton"
	skew := sp.SkewRate
	classes := sp.Faults
	if classes == nil {
		classes = SoakFaults
	}
	var eps []Episode
	order := rng.Perm(len(classes))
	for i, r := 0, 3; ; i++ {
		f := classes[order[i%len(order)]]
		outage := 2 + rng.IntN(5)
		if r+outage > p.Rounds-6 {
			return eps
		}
		ep := Episode{Fault: f, Start: r, Outage: outage}
		switch f {
		case Skew:
			ep.Rate, ep.Outage = skew, max(outage, 3)
		case Drift:
			ep.Rate = p.DriftRate
		case PauseBeforeEffect:
			// Armed until a batch comes due (within 2 rounds), then frozen
			// past the lease, so that a contender takes over and the late
			// write meets a raised fence.
			ep.Outage = max(outage, p.Lease+4)
		case Pause, Crash:
			ep.Outage = max(outage, p.Lease+1) // past the lease: a takeover
		}
		eps = append(eps, ep)
		r += ep.Outage + 2 + rng.IntN(3)
	}
}

// Validate returns an error naming the first invalid field.
func (sp SoakParams) Validate() error {
	var errs []error
	p := sp.params()
	if p.Rounds < 20 {
		errs = append(errs, fmt.Errorf("soak duration must be at least 20 rounds (%v), got %v", 20*p.Round, sp.Duration))
	}
	if p.Rounds > 10000 {
		errs = append(errs, fmt.Errorf("soak duration must be at most 10000 rounds (%v), got %v", 10000*p.Round, sp.Duration))
	}
	if sp.Round < time.Millisecond {
		return fmt.Errorf("soak round must be at least 1ms, got %v", sp.Round)
	}
	if sp.SkewRate <= -1 || sp.SkewRate > 100 {
		errs = append(errs, fmt.Errorf("skew rate must be above -1 (a clock must run forward), got %v", sp.SkewRate))
	}
	for _, f := range sp.Faults {
		if !slices.Contains(SoakFaults, f) {
			errs = append(errs, fmt.Errorf("soak fault %q: want one of %v", f, SoakFaults))
		}
	}
	if err := p.Validate(); err != nil && len(errs) == 0 {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Soak runs one soak schedule in net mode (cfg.Net names the store) and
// checks the nodes' histories: Result.History says what the checker found.
func Soak(ctx context.Context, sp SoakParams, cfg Config) (SoakResult, error) {
	if cfg.Net == "" {
		return SoakResult{}, errors.New("drill: a soak runs in net mode: set Config.Net")
	}
	if err := sp.Validate(); err != nil {
		return SoakResult{}, err
	}
	p := sp.params()
	eps := sp.schedule(p)
	began := time.Now()
	r, err := runEpisodes(ctx, p, FencingTrigger, cfg, eps, fmt.Sprintf("soak-%d", sp.Seed))
	return SoakResult{Seed: sp.Seed, Store: cfg.Net, Episodes: eps, Result: r, Seconds: time.Since(began).Seconds()}, err
}

// SoakTable renders soak results, one line per schedule and a total.
func SoakTable(rs []SoakResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-6s %6s %7s %8s %8s %7s %7s %6s %6s %5s  %s\n", "store", "seed", "faults", "periods", "accepted", "refused", "overlap", "twice", "lost", "other", "secs", "fault classes")
	var tot struct{ faults, periods, accepted, refused, overlap, twice, lost, other int }
	classes := map[Fault]bool{}
	for _, r := range rs {
		h := r.Result.History
		if h == nil {
			h = &history.Result{}
		}
		n := map[string]int{}
		for _, v := range h.Violations {
			n[v.Check]++
		}
		other := len(h.Violations) - n["overlap"] - n["twice"] - n["lost"]
		var names []string
		for _, c := range r.Classes() {
			names = append(names, string(c))
			classes[c] = true
		}
		fmt.Fprintf(&b, "%-9s %-6d %6d %7d %8d %8d %7d %7d %6d %6d %5.0f  %s\n", r.Store, r.Seed, len(r.Episodes), h.Periods,
			h.Accepted, h.Refused, n["overlap"], n["twice"], n["lost"], other, r.Seconds, strings.Join(names, ","))
		tot.faults += len(r.Episodes)
		tot.periods += h.Periods
		tot.accepted += h.Accepted
		tot.refused += h.Refused
		tot.overlap += n["overlap"]
		tot.twice += n["twice"]
		tot.lost += n["lost"]
		tot.other += other
	}
	fmt.Fprintf(&b, "%-9s %-6s %6d %7d %8d %8d %7d %7d %6d %6d %5s  %d classes\n", "total", fmt.Sprint(len(rs)), tot.faults, tot.periods,
		tot.accepted, tot.refused, tot.overlap, tot.twice, tot.lost, tot.other, "", len(classes))
	return b.String()
}
