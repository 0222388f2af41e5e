package etcd_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// These tests run baton Electors (and a schedule.Runner) on real embedded
// etcd clusters, each node with a client that reaches only the members on
// its side, and check the election log and every accepted fenced write at
// the end. A real cluster runs on real time, so the leases are short and
// the timing assertions leave slack for a loaded 2-core machine.
const (
	eLease  = 1500 * time.Millisecond
	eRenew  = 300 * time.Millisecond
	eMargin = 100 * time.Millisecond // the clock uncertainty e
	ePoll   = 100 * time.Millisecond
	// eSafe is the glossary's T_safe = T_lease + 2e: how long a contender
	// waits after it last saw the record change before taking over.
	eSafe = eLease + 2*eMargin
	// eSlack absorbs scheduling, timer and etcd latency on a busy machine.
	eSlack = time.Second
	// writeEvery is how often a leader tries a fenced write.
	writeEvery = 50 * time.Millisecond
	// electionName is the election (and job) every test contends for.
	electionName = "billing"
)

// write is one fenced write the resource accepted.
type write struct {
	node   string
	token  uint64
	period string // the period for an executor's write, "" otherwise
	at     time.Time
}

// resource is the protected resource every node of a test writes to: a
// fence.Guard shared by all sides of any partition (it lives in the test
// process), so that a node that should not act would be seen acting.
type resource struct {
	guard fence.Guard

	mu      sync.Mutex
	writes  []write // accepted, in the order the guard accepted them
	refused []write // refused with ErrStaleToken
}

// try makes one fenced write of token for node.
func (r *resource) try(node string, token uint64, period string) error {
	w := write{node: node, token: token, period: period}
	err := r.guard.Do(electionName, token, func() error {
		w.at = time.Now()
		r.mu.Lock()
		r.writes = append(r.writes, w)
		r.mu.Unlock()
		return nil
	})
	if errors.Is(err, fence.ErrStaleToken) {
		w.at = time.Now()
		r.mu.Lock()
		r.refused = append(r.refused, w)
		r.mu.Unlock()
	}
	return err
}

func (r *resource) accepted() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

// termRec is one term a node won.
type termRec struct {
	term  *baton.Term
	won   time.Time // when Run handed the term to the node's work
	ended time.Time // when the node's work saw the term end (zero: not yet)
}

// enode is one baton node: an Elector on a store whose client reaches only
// the given members, leading through Elector.Run, trying a fenced write
// every writeEvery while its term is Valid, and optionally running the job
// with a schedule.Runner.
type enode struct {
	id  string
	st  *etcd.Store
	el  *baton.Elector
	res *resource

	cancel context.CancelFunc
	done   chan struct{}
	stop   sync.Once

	mu    sync.Mutex
	terms []*termRec
	cur   *termRec
}

// ecluster is one test's etcd cluster, baton nodes and what they share.
type ecluster struct {
	t      *testing.T
	c      *etcdtest.Cluster
	prefix string
	res    *resource
	nodes  []*enode
	exec   *executions // nil: no Runner
}

func newECluster(t *testing.T, c *etcdtest.Cluster) *ecluster {
	ec := &ecluster{t: t, c: c, prefix: freshPrefix(t), res: &resource{}}
	t.Cleanup(ec.stopAll)
	return ec
}

// endpoints returns the client addresses of members ms.
func (ec *ecluster) endpoints(ms ...int) []string {
	var eps []string
	for _, i := range ms {
		eps = append(eps, ec.c.Endpoint(i))
	}
	return eps
}

// open opens a store on members ms. The cluster must have a quorum: Open
// checks the schema with a write.
func (ec *ecluster) open(ms ...int) *etcd.Store {
	return openStore(ec.t, ec.endpoints(ms...), etcd.WithPrefix(ec.prefix), etcd.WithRequestTimeout(reqTimeout))
}

// addNode makes node id on members ms without starting it.
func (ec *ecluster) addNode(id string, ms ...int) *enode {
	st := ec.open(ms...)
	el, err := baton.New(st, electionName, baton.WithNode(id), baton.WithLease(eLease), baton.WithRenew(eRenew),
		baton.WithClockMargin(eMargin), baton.WithPoll(ePoll))
	if err != nil {
		ec.t.Fatal(err)
	}
	n := &enode{id: id, st: st, el: el, res: ec.res}
	ec.nodes = append(ec.nodes, n)
	return n
}

// start starts n campaigning.
func (ec *ecluster) start(n *enode) {
	var runner *schedule.Runner
	if ec.exec != nil {
		every, err := schedule.Every(time.Second, 0)
		if err != nil {
			ec.t.Fatal(err)
		}
		runner, err = schedule.New(n.st, schedule.Job{Name: electionName, Schedule: every}, ec.exec.executor(n.id, n.res),
			schedule.WithPoll(ePoll), schedule.WithRetry(ePoll), schedule.WithCallTimeout(eRenew))
		if err != nil {
			ec.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.el.Run(ctx, func(ctx context.Context, term *baton.Term) error {
			return n.lead(ctx, term, runner)
		})
	}()
}

// lead is the node's work while it holds term.
func (n *enode) lead(ctx context.Context, term *baton.Term, runner *schedule.Runner) error {
	rec := &termRec{term: term, won: time.Now()}
	n.mu.Lock()
	n.terms = append(n.terms, rec)
	n.cur = rec
	n.mu.Unlock()
	stop := context.AfterFunc(term.Context(), func() {
		n.mu.Lock()
		rec.ended = time.Now()
		n.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	if runner != nil {
		wg.Go(func() { runner.Run(ctx, term) })
	}
	tk := time.NewTicker(writeEvery)
	defer tk.Stop()
	for {
		if term.Valid() {
			n.res.try(n.id, term.Token(), "")
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			n.mu.Lock()
			if n.cur == rec {
				n.cur = nil
			}
			n.mu.Unlock()
			return ctx.Err()
		case <-tk.C:
		}
	}
}

// valid reports whether n holds a term that is Valid now.
func (n *enode) valid() (*termRec, bool) {
	n.mu.Lock()
	cur := n.cur
	n.mu.Unlock()
	return cur, cur != nil && cur.term.Valid()
}

// allTerms returns a copy of n's terms.
func (n *enode) allTerms() []termRec {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []termRec
	for _, r := range n.terms {
		out = append(out, *r)
	}
	return out
}

// stopAll stops every node at once: a node cut off from its quorum may
// take up to a lease to give up its release.
func (ec *ecluster) stopAll() {
	var wg sync.WaitGroup
	for _, n := range ec.nodes {
		wg.Go(func() { n.stop.Do(func() { ec.stopNode(n) }) })
	}
	wg.Wait()
}

// stopNode stops n's campaign (resigning a term it holds) and closes its
// store.
func (ec *ecluster) stopNode(n *enode) {
	if n.cancel != nil {
		n.cancel()
		select {
		case <-n.done:
		case <-time.After(10 * time.Second):
			ec.t.Errorf("node %s did not stop within 10s", n.id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	n.el.Close(ctx)
	cancel()
	n.st.Close()
}

// leaders returns the nodes whose term is Valid now.
func (ec *ecluster) leaders() []*enode {
	var out []*enode
	for _, n := range ec.nodes {
		if _, ok := n.valid(); ok {
			out = append(out, n)
		}
	}
	return out
}

// waitOneLeader waits until exactly one node holds a Valid term and keeps it
// for two renew intervals with no other node valid, and returns it.
func (ec *ecluster) waitOneLeader(within time.Duration) (*enode, *termRec) {
	ec.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if ls := ec.leaders(); len(ls) == 1 {
			rec, _ := ls[0].valid()
			stable := time.Now().Add(2 * eRenew)
			for time.Now().Before(stable) {
				if ls2 := ec.leaders(); len(ls2) != 1 || ls2[0] != ls[0] {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if ls2 := ec.leaders(); len(ls2) == 1 && ls2[0] == ls[0] {
				if r2, _ := ls[0].valid(); r2 == rec {
					return ls[0], rec
				}
			}
		}
		if time.Now().After(deadline) {
			ec.t.Fatalf("no single stable leader within %v (valid now: %d)", within, len(ec.leaders()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sampler samples Valid() of a set of nodes every few milliseconds until
// stopped, and records every sample that was true.
type sampler struct {
	stop    chan struct{}
	done    chan struct{}
	samples int
	valid   []string // "node token at"
}

func sample(nodes []*enode, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			for _, n := range nodes {
				s.samples++
				if rec, ok := n.valid(); ok {
					s.valid = append(s.valid, fmt.Sprintf("%s token %d at %s", n.id, rec.term.Token(), time.Now().Format("15:04:05.000")))
				}
			}
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return s
}

// halt stops the sampler and returns its samples and the true ones.
func (s *sampler) halt() (int, []string) {
	close(s.stop)
	<-s.done
	return s.samples, s.valid
}

// checkEvidence checks the run's evidence, read through st: the election
// log's acquisitions strictly raise the token; no accepted write carries a
// token lower than an earlier accepted one, and every accepted token was
// acquired in the log by the node that wrote with it; a term whose lease
// expired ended before the next term was won; and, when a Runner ran, at
// most one done row per period, each done by exactly one execution.
func (ec *ecluster) checkEvidence(st store.Store) {
	t := ec.t
	t.Helper()
	var evs []store.Event
	eventually(t, "reading the election log", 15*time.Second, func(ctx context.Context) (err error) {
		evs, err = st.History(ctx, electionName, 0, 0)
		return err
	})
	holderOf := map[uint64]string{}
	var last uint64
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Errorf("log event %d has seq %d", i+1, ev.Seq)
		}
		switch ev.Kind {
		case store.Acquired, store.TakenOver, store.Transferred:
			if ev.Token <= last {
				t.Errorf("log event %d (%s by %s) has token %d, not above the previous acquisition's %d", ev.Seq, ev.Kind, ev.Holder, ev.Token, last)
			}
			last = ev.Token
			holderOf[ev.Token] = ev.Holder
		default:
			if ev.Token < last {
				t.Errorf("log event %d (%s) lowers the token to %d from %d", ev.Seq, ev.Kind, ev.Token, last)
			}
		}
		t.Logf("log %2d  %-24s %-4s token %d", ev.Seq, ev.Kind, ev.Holder, ev.Token)
	}

	writes := ec.res.accepted()
	perToken := map[uint64]int{}
	var high uint64
	for i, w := range writes {
		if w.token < high {
			t.Errorf("accepted write %d by %s carries token %d after an accepted %d", i, w.node, w.token, high)
		}
		high = max(high, w.token)
		perToken[w.token]++
		if h, ok := holderOf[w.token]; !ok || h != w.node {
			t.Errorf("accepted write %d by %s with token %d: the log has that token acquired by %q", i, w.node, w.token, h)
		}
	}
	ec.res.mu.Lock()
	refused := len(ec.res.refused)
	ec.res.mu.Unlock()
	t.Logf("accepted fenced writes: %d (per token %v); refused as stale: %d", len(writes), perToken, refused)

	// The glossary's T_safe: a term that ran out its lease ended (its own
	// deadline) strictly before the next term was won.
	type won struct {
		node string
		termRec
	}
	var all []won
	for _, n := range ec.nodes {
		for _, r := range n.allTerms() {
			all = append(all, won{n.id, r})
		}
	}
	slices.SortFunc(all, func(a, b won) int { return cmp.Compare(a.term.Token(), b.term.Token()) })
	for i := 1; i < len(all); i++ {
		prev, next := all[i-1], all[i]
		if next.term.Token() <= prev.term.Token() {
			t.Errorf("two terms with token %d", next.term.Token())
		}
		if errors.Is(prev.term.Err(), baton.ErrLeaseExpired) && !prev.term.Deadline().Before(next.won) {
			t.Errorf("%s's term %d expired at %v, not before %s's term %d was won at %v",
				prev.node, prev.term.Token(), prev.term.Deadline().Format("15:04:05.000"), next.node, next.term.Token(), next.won.Format("15:04:05.000"))
		}
	}

	if ec.exec != nil {
		ec.exec.check(t, st)
	}
}

// executions records the Runner's executions: (period, token) per node.
type executions struct {
	mu   sync.Mutex
	runs []write
}

// executor returns node's Executor: a fenced write of the period through
// the shared resource, recorded.
func (x *executions) executor(node string, res *resource) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		if err := res.try(node, token, p.Key); err != nil {
			return 1, "", err
		}
		x.mu.Lock()
		x.runs = append(x.runs, write{node: node, token: token, period: p.Key, at: time.Now()})
		x.mu.Unlock()
		return 0, "ok", nil
	}
}

// check reads the ledger and checks: one row per period; every done row's
// token is the token of exactly one recorded execution of that period.
func (x *executions) check(t *testing.T, st store.Store) {
	t.Helper()
	var rows []store.Run
	eventually(t, "reading the ledger", 15*time.Second, func(ctx context.Context) (err error) {
		rows, err = st.Runs(ctx, electionName, "", 0)
		return err
	})
	x.mu.Lock()
	runs := slices.Clone(x.runs)
	x.mu.Unlock()
	seen := map[string]bool{}
	done := 0
	for _, r := range rows {
		if seen[r.Period] {
			t.Errorf("two ledger rows for period %s", r.Period)
		}
		seen[r.Period] = true
		if r.State != store.Done {
			continue
		}
		done++
		n := 0
		for _, x := range runs {
			if x.period == r.Period && x.token == r.Token {
				n++
			}
		}
		if n != 1 {
			t.Errorf("period %s is done under token %d, with %d executions under that token", r.Period, r.Token, n)
		}
	}
	t.Logf("ledger: %d rows, %d done; executions: %d", len(rows), done, len(runs))
}

// doneThrough waits until every scheduled period of the job up to and
// including through is done.
func (x *executions) doneThrough(t *testing.T, st store.Store, through time.Time, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), reqTimeout)
		job, jerr := st.EnsureJob(ctx, store.Job{Name: electionName})
		rows, rerr := st.Runs(ctx, electionName, "", 0)
		cancel()
		missing := ""
		if err := errors.Join(jerr, rerr); err != nil {
			missing = err.Error()
		} else {
			state := map[string]store.RunState{}
			for _, r := range rows {
				state[r.Period] = r.State
			}
			every, _ := schedule.Every(time.Second, 0)
			for p := every.Next(job.Created); !p.After(through); p = every.Next(p) {
				if state[schedule.Key(p)] != store.Done {
					missing = fmt.Sprintf("period %s is %q", schedule.Key(p), state[schedule.Key(p)])
					break
				}
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("periods through %s not all done within %v: %s", schedule.Key(through), within, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitEnded waits until tr's term has ended and returns when its work saw
// that.
func waitEnded(t *testing.T, n *enode, tr *termRec, within time.Duration) time.Time {
	t.Helper()
	select {
	case <-tr.term.Done():
	case <-time.After(within):
		t.Fatalf("%s's term %d did not end within %v", n.id, tr.term.Token(), within)
	}
	for {
		n.mu.Lock()
		ended := tr.ended
		n.mu.Unlock()
		if !ended.IsZero() {
			return ended
		}
		time.Sleep(time.Millisecond)
	}
}

// checkSteppedDown checks that tr ended because its lease ran out, by its
// deadline (plus slack for the timer), and is not Valid any more.
func checkSteppedDown(t *testing.T, n *enode, tr *termRec, ended time.Time) {
	t.Helper()
	if !errors.Is(tr.term.Err(), baton.ErrLeaseExpired) {
		t.Errorf("%s's term ended with %v, want ErrLeaseExpired", n.id, tr.term.Err())
	}
	if tr.term.Valid() {
		t.Errorf("%s's term is still Valid after it ended", n.id)
	}
	late := ended.Sub(tr.term.Deadline())
	t.Logf("%s stepped down %v after its deadline (the deadline was %v after its last successful renewal started)", n.id, late.Round(time.Millisecond), eLease)
	if late > eSlack/2 {
		t.Errorf("%s stepped down %v after its deadline, want within %v", n.id, late, eSlack/2)
	}
	// No write of that term was accepted after its deadline.
	for _, w := range n.res.accepted() {
		if w.token == tr.term.Token() && !w.at.Before(tr.term.Deadline()) {
			t.Errorf("%s's write with token %d accepted at %v, after its deadline %v", n.id, w.token, w.at, tr.term.Deadline())
		}
	}
}

// TestElectorQuorumLoss: a baton leader whose client reaches only member 0
// of three, with a contender on all three and a Runner running a 1s job on
// whoever leads. Members 1 and 2 stop: the leader cannot renew and steps
// down at its deadline with ErrLeaseExpired; for the whole outage nobody is
// Valid and no fenced write or run is accepted (degraded mode). After the
// members restart exactly one node leads, under a higher token, and it
// catches up the periods that came due during the outage.
func TestElectorQuorumLoss(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	ec := newECluster(t, c)
	ec.exec = &executions{}
	a := ec.addNode("a", 0)
	b := ec.addNode("b", 0, 1, 2)
	observer := ec.open(0, 1, 2)
	defer observer.Close()

	ec.start(a)
	_, first := ec.waitOneLeader(10 * time.Second)
	if first.term.Node() != "a" {
		t.Fatalf("%s leads, want a", first.term.Node())
	}
	ec.start(b)
	time.Sleep(2 * time.Second) // a few periods run; b watches a renew

	c.Stop(1)
	c.Stop(2)
	lost := time.Now()
	ended := waitEnded(t, a, first, eLease+eSlack)
	checkSteppedDown(t, a, first, ended)
	t.Logf("a stepped down %v after the second member had stopped", ended.Sub(lost).Round(time.Millisecond))

	// The outage lasts well beyond lease + 2e: had anything been able to
	// take over, it would have.
	s := sample(ec.nodes, 10*time.Millisecond)
	outage := first.term.Deadline()
	time.Sleep(2 * eSafe)
	n, valid := s.halt()
	outageEnd := time.Now()
	t.Logf("outage: Valid() of both nodes sampled %d times over %v, true in %d samples", n, outageEnd.Sub(outage).Round(time.Millisecond), len(valid))
	if len(valid) > 0 {
		t.Errorf("a node was Valid without a quorum: %v", valid)
	}
	for _, w := range ec.res.accepted() {
		if !w.at.Before(outage) {
			t.Errorf("write by %s with token %d accepted at %v, during the outage", w.node, w.token, w.at.Format("15:04:05.000"))
		}
	}
	for _, node := range ec.nodes {
		for _, r := range node.allTerms() {
			if r.won.After(outage) {
				t.Errorf("%s won term %d at %v, during the outage", node.id, r.term.Token(), r.won.Format("15:04:05.000"))
			}
		}
	}
	// baton status says so: see TestStatusEtcdQuorumLoss in cmd/baton.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := observer.Get(ctx, electionName)
	cancel()
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get without a quorum: %v, want ErrUnavailable", err)
	}

	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now() // a quorum again
	if err := c.Restart(2); err != nil {
		t.Fatal(err)
	}
	leader, next := ec.waitOneLeader(15 * time.Second)
	t.Logf("after the restart %s leads with token %d, %v after member 1 was ready again (a quorum)", leader.id, next.term.Token(), next.won.Sub(restarted).Round(time.Millisecond))
	if next.term.Token() <= first.term.Token() {
		t.Errorf("token after the outage %d, want above %d", next.term.Token(), first.term.Token())
	}
	ec.exec.doneThrough(t, observer, time.Now(), 10*time.Second)
	ec.stopAll()
	ec.checkEvidence(observer)
}

// resign ends n's current term by hand, as an operator's handover would:
// the record is released and every node that can reach a quorum may take
// it at once. n campaigns again (Elector.Run).
func resign(t *testing.T, n *enode, tr *termRec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.term.Resign(ctx); err != nil {
		t.Fatalf("%s resigning term %d: %v", n.id, tr.term.Token(), err)
	}
}

// TestElectorPartition3Plus2: five members cut 3+2, with etcd's Raft leader
// on the two-member side, and two baton nodes on each side whose clients
// reach only their side's members. Only the three-member side elects: its
// nodes lead and hand over (a resignation leaves the record free, and even
// a free record is out of the two-member side's reach); the two-member
// side's nodes are never Valid and write nothing. After the partition heals
// there is one leader; when the big side's nodes stop, a node of the small
// side takes over under a higher token: tokens only ever increased.
func TestElectorPartition3Plus2(t *testing.T) {
	c := etcdtest.StartCluster(t, 5)
	lead := c.Leader(0)
	minority := []int{lead, (lead + 1) % 5}
	majority := []int{(lead + 2) % 5, (lead + 3) % 5, (lead + 4) % 5}
	ec := newECluster(t, c)
	// Stores check their schema with a write: open them while whole.
	big := []*enode{ec.addNode("m1", majority...), ec.addNode("m2", majority...)}
	small := []*enode{ec.addNode("s1", minority...), ec.addNode("s2", minority...)}
	observer := ec.open(majority...)
	defer observer.Close()

	c.Partition(majority, minority)
	cut := time.Now()
	t.Logf("partitioned: members %v | %v (etcd leader %d on the small side)", majority, minority, lead)
	smp := sample(small, 5*time.Millisecond)
	for _, n := range ec.nodes {
		ec.start(n)
	}
	leader, first := ec.waitOneLeader(15 * time.Second)
	if !slices.Contains(big, leader) {
		t.Fatalf("%s leads on the small side", leader.id)
	}
	t.Logf("%s elected with token %d, %v after the cut", leader.id, first.term.Token(), first.won.Sub(cut).Round(time.Millisecond))
	time.Sleep(eSafe)
	resign(t, leader, first)
	leader, second := ec.waitOneLeader(10 * time.Second)
	if !slices.Contains(big, leader) {
		t.Fatalf("%s leads on the small side", leader.id)
	}
	t.Logf("after a resignation %s leads with token %d", leader.id, second.term.Token())
	time.Sleep(eSafe)

	n, valid := smp.halt()
	healed := time.Now()
	t.Logf("small side: Valid() sampled %d times over %v, true in %d samples", n, healed.Sub(cut).Round(time.Millisecond), len(valid))
	if len(valid) > 0 {
		t.Errorf("a node on the small side was Valid: %v", valid)
	}
	for _, n := range small {
		if ts := n.allTerms(); len(ts) > 0 {
			t.Errorf("%s on the small side won %d terms during the partition", n.id, len(ts))
		}
	}
	for _, w := range ec.res.accepted() {
		if w.node == "s1" || w.node == "s2" {
			t.Errorf("write by %s with token %d accepted during the partition", w.node, w.token)
		}
	}

	c.Heal()
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	leader, tr := ec.waitOneLeader(15 * time.Second)
	if tr != second {
		t.Errorf("after the heal %s leads with token %d, want %s to keep token %d", leader.id, tr.term.Token(), second.term.Node(), second.term.Token())
	}
	// The big side's nodes stop (resigning): the small side's nodes, back
	// in reach of a quorum, take over under a higher token.
	for _, n := range big {
		n.stop.Do(func() { ec.stopNode(n) })
	}
	leader, last := ec.waitOneLeader(15 * time.Second)
	t.Logf("after the heal the big side's nodes stopped; %s leads with token %d", leader.id, last.term.Token())
	if !slices.Contains(small, leader) {
		t.Errorf("%s leads, want a node of the small side", leader.id)
	}
	if last.term.Token() <= second.term.Token() {
		t.Errorf("token after the heal %d, want above %d", last.term.Token(), second.term.Token())
	}
	ec.stopAll()
	ec.checkEvidence(observer)
}

// TestElectorLeaderMemberCutOff: three members; the baton leader's client
// reaches only one member, etcd's Raft leader, and that member alone is cut
// off from the other two. Two contenders reach only the other two members.
// The leader steps down at its deadline, its last successful renewal's
// start plus the lease; a contender takes over no sooner than lease + 2e
// after that start (the glossary's T_safe, so the old deadline is strictly
// before the takeover) and within lease + 2e + poll + slack. A Runner runs
// a 1s job throughout: the periods of the handover are each done once.
// After the heal the old leader rejoins as a contender.
func TestElectorLeaderMemberCutOff(t *testing.T) {
	c := etcdtest.StartCluster(t, 3)
	alone := c.Leader(0)
	rest := []int{(alone + 1) % 3, (alone + 2) % 3}
	ec := newECluster(t, c)
	ec.exec = &executions{}
	a := ec.addNode("a", alone)
	b := ec.addNode("b", rest...)
	cc := ec.addNode("c", rest...)
	observer := ec.open(rest...)
	defer observer.Close()

	ec.start(a)
	_, first := ec.waitOneLeader(10 * time.Second)
	if first.term.Node() != "a" {
		t.Fatalf("%s leads, want a", first.term.Node())
	}
	ec.start(b)
	ec.start(cc)
	time.Sleep(2 * time.Second) // periods run; b and c watch a renew

	c.Partition([]int{alone}, rest)
	cut := time.Now()
	ended := waitEnded(t, a, first, eLease+eSlack)
	checkSteppedDown(t, a, first, ended)
	leader, next := ec.waitOneLeader(eSafe + 10*time.Second)
	if leader == a {
		t.Fatal("a leads again while cut off")
	}
	lastRenewal := first.term.Deadline().Add(-eLease)
	takeover := next.won.Sub(lastRenewal)
	t.Logf("cut at +0; a's last successful renewal started at %v, a stepped down at %v, %s took over at %v with token %d",
		lastRenewal.Sub(cut).Round(time.Millisecond), ended.Sub(cut).Round(time.Millisecond), leader.id, next.won.Sub(cut).Round(time.Millisecond), next.term.Token())
	t.Logf("takeover %v after a's last renewal started (lease + 2e = %v, bound %v); nobody led for %v",
		takeover.Round(time.Millisecond), eSafe, eSafe+ePoll+eSlack, next.won.Sub(first.term.Deadline()).Round(time.Millisecond))
	if takeover < eSafe-time.Millisecond || takeover > eSafe+ePoll+eSlack {
		t.Errorf("takeover %v after a's last renewal started, want within [%v, %v]", takeover, eSafe, eSafe+ePoll+eSlack)
	}
	if !first.term.Deadline().Before(next.won) {
		t.Errorf("a's deadline %v is not before the takeover %v", first.term.Deadline(), next.won)
	}
	if next.term.Token() <= first.term.Token() {
		t.Errorf("token %d after %d", next.term.Token(), first.term.Token())
	}
	ec.exec.doneThrough(t, observer, time.Now(), 10*time.Second)

	c.Heal()
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(eSafe) // a reads the record again and contends
	if l, tr := ec.waitOneLeader(10 * time.Second); tr != next {
		t.Errorf("after the heal %s leads with token %d, want %s to keep token %d", l.id, tr.term.Token(), leader.id, next.term.Token())
	}
	ec.exec.doneThrough(t, observer, time.Now(), 10*time.Second)
	ec.stopAll()
	ec.checkEvidence(observer)
}
