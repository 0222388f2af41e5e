// Package electortest holds what tests of baton's electors share: the
// virtual-time fixtures of package baton's and batonprom's tests
// (virtual.go: NewElector, Campaign, WaitHeld and the tests' timings), and
// the real-time elector harness every networked backend's tests run, as
// every backend runs storetest.Run: baton Electors
// (and a schedule.Runner) on real store handles, a protected resource they
// write to while they lead, and the checks that must hold whatever the
// faults were.
//
// A backend's test builds a Cluster, adds nodes on store handles it opens
// (a PostgreSQL connection with its own application_name, an etcd client
// that reaches only some members), starts them, injects its own faults
// (a stopped server, killed sessions, a partition) and calls Check at the
// end. Run runs the scenarios that need no backend-specific fault.
//
// Real time is needed, so the leases are short and the assertions leave
// slack (Timing.Slack) for a loaded two-core machine.
package electortest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Name is the election (and job) name every node of a Cluster contends for.
const Name = "billing"

// Timing is the election timing of a Cluster.
type Timing struct {
	Lease, Renew, Margin, Poll time.Duration
	// Slack is how late a deadline may be noticed on a busy machine.
	Slack time.Duration
	// WriteEvery is how often a leader tries a fenced write while Valid.
	WriteEvery time.Duration
	// CallTimeout bounds reads of the evidence (default 2s).
	CallTimeout time.Duration
}

// Safe is the glossary's T_safe = lease + 2e: how long a contender waits
// after it last saw the record change before taking over.
func (tm Timing) Safe() time.Duration { return tm.Lease + 2*tm.Margin }

// Write is one fenced write.
type Write struct {
	Node   string
	Token  uint64
	Period string // the period for an executor's write, "" otherwise
	// At is when the write was sent (Cluster.Acked) or applied (the
	// resource's record of applied writes).
	At time.Time
}

// Resource is the protected resource the leaders write to.
type Resource interface {
	// Write makes one fenced write of token for node (and period, for the
	// Runner's executions): nil when the resource applied it, an error
	// wrapping fence.ErrStaleToken when its fence refused it, any other
	// error when the outcome is unknown (the resource was unreachable).
	Write(ctx context.Context, node string, token uint64, period string) error
	// Applied returns the writes the resource applied, in the order it
	// applied them (commit order). At may be zero when not known.
	Applied(ctx context.Context) ([]Write, error)
}

// Cluster is one test's nodes and what they share.
type Cluster struct {
	t      *testing.T
	Timing Timing
	Res    Resource
	// Runner, when true, makes every node started afterwards run the job
	// Name (every second) with a schedule.Runner while it leads.
	Runner bool

	mu     sync.Mutex
	nodes  []*Node
	acks   []Write // writes acknowledged to their leader
	execs  []Write // the Runner's executions that succeeded
	errs   []string
	delay  *testenv.Delay
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a cluster with res as the protected resource (NewGuarded()
// when nil), and a sampler that records any moment at which two nodes hold
// a Valid term. Nodes are stopped at the end of the test.
func New(t *testing.T, tm Timing, res Resource) *Cluster {
	if res == nil {
		res = NewGuarded()
	}
	if tm.CallTimeout == 0 {
		tm.CallTimeout = 2 * time.Second
	}
	c := &Cluster{t: t, Timing: tm, Res: res, delay: testenv.MeasureDelay(t)}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.sampleTwoValid(ctx)
	}()
	t.Cleanup(func() {
		c.StopAll()
		cancel()
		c.wg.Wait()
	})
	return c
}

// Slack is how late a deadline between from and to may be noticed: the
// Timing's Slack plus twice the scheduling delay this process measured
// over that interval (testenv.Delay.Slack), so that a bound stays tight
// on a quiet machine and grows on a loaded one by what the machine took.
func (c *Cluster) Slack(from, to time.Time) time.Duration {
	return c.delay.Slack(c.Timing.Slack, from, to)
}

// Nodes returns the cluster's nodes.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// sampleTwoValid reads every node's Valid() every millisecond or so and
// records a violation when two are true at once.
func (c *Cluster) sampleTwoValid(ctx context.Context) {
	for ctx.Err() == nil {
		var valid []string
		for _, n := range c.Nodes() {
			if tr, ok := n.Valid(); ok {
				valid = append(valid, fmt.Sprintf("%s/%d", n.ID, tr.Term.Token()))
			}
		}
		if len(valid) > 1 {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Sprintf("%s: two valid leaders %v", time.Now().Format("15:04:05.000"), valid))
			c.mu.Unlock()
		}
		time.Sleep(time.Millisecond)
	}
}

// Acked returns the writes acknowledged to their leaders, in the order
// the acknowledgements arrived.
func (c *Cluster) Acked() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.acks)
}

// AddNode makes node id on the store handle st, without starting it. The
// cluster closes st when the node stops.
func (c *Cluster) AddNode(id string, st store.Store) *Node {
	c.t.Helper()
	tm := c.Timing
	el, err := baton.New(st, Name, baton.WithNode(id), baton.WithLease(tm.Lease), baton.WithRenew(tm.Renew),
		baton.WithClockMargin(tm.Margin), baton.WithPoll(tm.Poll))
	if err != nil {
		c.t.Fatal(err)
	}
	n := &Node{ID: id, Store: st, El: el, c: c}
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	return n
}

// Start starts n campaigning through Elector.Run; while it leads it tries
// a fenced write every WriteEvery while its term is Valid, and runs the job
// when c.Runner is set.
func (c *Cluster) Start(n *Node) {
	c.t.Helper()
	var runner *schedule.Runner
	if c.Runner {
		every, err := schedule.Every(time.Second, 0)
		if err != nil {
			c.t.Fatal(err)
		}
		runner, err = schedule.New(n.Store, schedule.Job{Name: Name, Schedule: every}, c.executor(n.ID),
			schedule.WithPoll(c.Timing.Poll), schedule.WithRetry(c.Timing.Poll), schedule.WithCallTimeout(c.Timing.Renew))
		if err != nil {
			c.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.El.Run(ctx, func(ctx context.Context, term *baton.Term) error {
			return n.lead(ctx, term, runner)
		})
	}()
}

// StartAll starts every node not started yet.
func (c *Cluster) StartAll() {
	for _, n := range c.Nodes() {
		if n.cancel == nil {
			c.Start(n)
		}
	}
}

// write makes one fenced write through the resource and records its
// acknowledgement.
func (c *Cluster) write(ctx context.Context, node string, token uint64, period string, decided time.Time) error {
	wctx, cancel := context.WithTimeout(ctx, c.Timing.Renew)
	defer cancel()
	// An acknowledged write is recorded at the moment the holder decided
	// to send it (decided, read just before its Valid check): the holder
	// promises not to decide after its deadline, and a write decided in
	// time may well be sent and commit after it, which is what the fence
	// is for. (Stamped after the check, a write that passed it a few
	// microseconds before the deadline was once reported as sent after.)
	err := c.Res.Write(wctx, node, token, period)
	if err == nil {
		c.mu.Lock()
		c.acks = append(c.acks, Write{Node: node, Token: token, Period: period, At: decided})
		c.mu.Unlock()
	}
	return err
}

// executor is node's schedule.Executor: a fenced write of the period. A
// refused (stale) write is a failure that the fenced ledger refuses to
// record as well; any other error interrupts the run, which is claimed
// again.
func (c *Cluster) executor(node string) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		// The runner checked Valid just before calling the executor.
		err := c.write(ctx, node, token, p.Key, time.Now())
		switch {
		case err == nil:
			c.mu.Lock()
			c.execs = append(c.execs, Write{Node: node, Token: token, Period: p.Key, At: time.Now()})
			c.mu.Unlock()
			return 0, "ok", nil
		case isStale(err):
			return 1, "", err
		default:
			return 0, "", fmt.Errorf("%w: %w", schedule.ErrInterrupted, err)
		}
	}
}

// StopAll stops every node at once (each resigns a term it holds): a node
// cut off from the store may take up to a lease to give up its release.
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Go(n.Stop)
	}
	wg.Wait()
}

// Leaders returns the nodes whose term is Valid now.
func (c *Cluster) Leaders() []*Node {
	var out []*Node
	for _, n := range c.Nodes() {
		if _, ok := n.Valid(); ok {
			out = append(out, n)
		}
	}
	return out
}

// WaitOneLeader waits until exactly one node holds a Valid term and keeps it
// for two renew intervals with no other node valid, and returns it.
func (c *Cluster) WaitOneLeader(within time.Duration) (*Node, *TermRec) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if ls := c.Leaders(); len(ls) == 1 {
			rec, _ := ls[0].Valid()
			stable := time.Now().Add(2 * c.Timing.Renew)
			for time.Now().Before(stable) {
				if ls2 := c.Leaders(); len(ls2) != 1 || ls2[0] != ls[0] {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if ls2 := c.Leaders(); len(ls2) == 1 && ls2[0] == ls[0] {
				if r2, _ := ls[0].Valid(); r2 == rec {
					return ls[0], rec
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no single stable leader within %v (valid now: %d)", within, len(c.Leaders()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isStale reports a write the fence refused.
func isStale(err error) bool { return errors.Is(err, fence.ErrStaleToken) }

// LeadFirst starts first and waits until it leads, then starts the others
// and lets two seconds of periods run while they watch it renew. It
// returns first's term.
func (c *Cluster) LeadFirst(first *Node, others ...*Node) *TermRec {
	c.t.Helper()
	c.Start(first)
	_, rec := c.WaitOneLeader(10 * time.Second)
	if rec.Term.Node() != first.ID {
		c.t.Fatalf("%s leads, want %s", rec.Term.Node(), first.ID)
	}
	for _, n := range others {
		c.Start(n)
	}
	time.Sleep(2 * time.Second)
	return rec
}
