package explore

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/election"
)

// Rate is a node's clock rate, Num/Den of true time.
type Rate struct{ Num, Den int64 }

// Config is one explored configuration: the cluster, its settings, the
// horizon and the fault budget. Every node campaigns for one name.
type Config struct {
	Name  string
	About string
	Nodes int
	// The election settings every node runs with (election.Config).
	Lease, Renew, Margin, Poll time.Duration
	// Rates are the nodes' clock rates (nil or short: 1). The protocol
	// promises one valid term at a time while the ratio of two rates is
	// at most 1 + 2*Margin/Lease.
	Rates []Rate
	// End is the horizon: time never advances past it.
	End time.Duration
	// The fault budget of a path: crashes (each may restart), pauses
	// (each may resume), store answers failed or lost, and fenced writes
	// begun.
	Crashes, Pauses, Losses, Writes int
	// Faults bounds the crashes, pauses and losses of a path in all.
	Faults int
	// MaxDepth, when positive, stops a path at that many events; the
	// output names the bound when a state was cut there.
	MaxDepth int
	Mutate   Mutation

	// visit, when set (tests), is called with every new state's key and
	// the path that first reached it.
	visit func(k key, path func() []Event)
}

// Mutation turns a protection off, as baton sim --mutate does, so that the
// explorer shows it finds the breach.
type Mutation struct {
	Name string
	// NoMargin configures the nodes' machines with no clock margin while
	// the clocks still differ by up to the real one (sim's no-margin).
	NoMargin bool
	// NoFence makes the fence accept every write (sim's no-fence).
	NoFence bool
	// NoValidCheck lets a leader begin a write on its machine's token
	// without asking election.Valid first (sim's no-valid-check: the
	// scheduler machine's check before an effect; here the writer's,
	// as a baton.Term user's code asks Term.Valid()).
	NoValidCheck bool
}

func (c *Config) rate(i int) Rate {
	if i < len(c.Rates) {
		return c.Rates[i]
	}
	return Rate{1, 1}
}

// electionConfig is node i's machine configuration for incarnation inc.
func (c *Config) electionConfig(i, inc int) election.Config {
	margin := c.Margin
	if c.Mutate.NoMargin {
		margin = 0
	}
	return election.Config{Name: name, Node: fmt.Sprintf("node-%d", i), Incarnation: fmt.Sprintf("node-%d.%d", i, inc),
		Lease: c.Lease, Renew: c.Renew, Margin: margin, Poll: c.Poll, Retry: c.Poll}
}

// Validate checks c against the machine's own bounds.
func (c *Config) Validate() error {
	if c.Nodes < 1 || c.Nodes > 100 {
		return fmt.Errorf("explore: %d nodes: want 1 to 100", c.Nodes)
	}
	for i := 0; i < c.Nodes; i++ {
		if r := c.rate(i); r.Num <= 0 || r.Den <= 0 {
			return fmt.Errorf("explore: node-%d's clock rate %d/%d: want positive", i, r.Num, r.Den)
		}
	}
	return c.electionConfig(0, 1).Validate()
}

// The configurations, by name.
var configs = map[string]Config{
	"2x1-tiny": {
		Name: "2x1-tiny", About: "2 nodes x 1 name, no fault but the store's delays, two fenced writes; clock rates 1 and 1.1 (what go test explores)",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second, Writes: 2,
	},
	"2x1": {
		Name: "2x1", About: "2 nodes x 1 name, one fault (a crash and restart, a pause, or a lost or failed store answer), two fenced writes; clock rates 1 and 1.1",
		Nodes: 2, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {11, 10}}, End: 4 * time.Second,
		Crashes: 1, Pauses: 1, Losses: 1, Faults: 1, Writes: 2,
	},
	"3x1": {
		Name: "3x1", About: "3 nodes x 1 name, one fault (a crash and restart, a pause, or a lost or failed store answer), two fenced writes; clock rates 1, 1 and 1.1",
		Nodes: 3, Lease: 3 * time.Second, Renew: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Poll: 1500 * time.Millisecond,
		Rates: []Rate{{1, 1}, {1, 1}, {11, 10}}, End: 4 * time.Second,
		Crashes: 1, Pauses: 1, Losses: 1, Faults: 1, Writes: 2,
		// Not complete: 1.1 million states at depth 16 (137 s, 2.3 GB),
		// before the first renewal in most paths.
		MaxDepth: 14,
	},
}

// Configs lists the configurations' names, sorted.
func Configs() []string {
	var names []string
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the configuration called name.
func Lookup(name string) (Config, bool) {
	c, ok := configs[name]
	return c, ok
}

// Mutations lists the simulator's mutations the explorer runs, sorted.
func Mutations() []string {
	var names []string
	for n := range mutations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var mutations = map[string]Mutation{
	"no-margin":      {Name: "no-margin", NoMargin: true},
	"no-fence":       {Name: "no-fence", NoFence: true},
	"no-valid-check": {Name: "no-valid-check", NoValidCheck: true},
}

// Mutated returns c with the mutation called name.
func (c Config) Mutated(name string) (Config, error) {
	m, ok := mutations[name]
	if !ok {
		return c, fmt.Errorf("no mutation %q in the explorer: want %s", name, strings.Join(Mutations(), ", "))
	}
	c.Mutate = m
	return c, nil
}
