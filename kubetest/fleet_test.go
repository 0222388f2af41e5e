package kubetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store/kube"
)

// The mixed fleet's processes: the test binary run again with fleetRole
// set to "client-go" or "baton" (see runFleetChild).
const (
	fleetRole   = "KUBETEST_FLEET_ROLE"
	fleetID     = "KUBETEST_FLEET_ID"
	fleetConfig = "KUBETEST_FLEET_CONFIG" // a JSON fleetConn file
	fleetNS     = "KUBETEST_FLEET_NS"
	fleetFence  = "KUBETEST_FLEET_FENCE" // the register's host:port
)

// The fleet's timings: baton's lease of 1 s is written as a Lease of 2 s
// (store/kube adds a second), client-go's lease is 2 s; the job does one
// fenced write a period.
const (
	fleetLease  = time.Second
	fleetMargin = 100 * time.Millisecond
	fleetPoll   = 200 * time.Millisecond
	fleetPeriod = 500 * time.Millisecond
	fleetName   = "shared"
)

// fleetConn is what a child needs to reach the API server: the loopback
// superuser's configuration, written to a file.
type fleetConn struct {
	Host, BearerToken, ServerName string
	CAData, CertData, KeyData     []byte
	Insecure                      bool
}

func (c fleetConn) config() *rest.Config {
	return &rest.Config{Host: c.Host, BearerToken: c.BearerToken, TLSClientConfig: rest.TLSClientConfig{
		ServerName: c.ServerName, CAData: c.CAData, CertData: c.CertData, KeyData: c.KeyData, Insecure: c.Insecure,
	}}
}

// runFleetChild runs this process as one of the fleet's candidates if
// fleetRole says so, and never returns then (the parent kills it).
func runFleetChild() {
	role := os.Getenv(fleetRole)
	if role == "" {
		return
	}
	raw, err := os.ReadFile(os.Getenv(fleetConfig))
	var conn fleetConn
	if err == nil {
		err = json.Unmarshal(raw, &conn)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet child:", err)
		os.Exit(3)
	}
	ch := &fleetChild{id: os.Getenv(fleetID), ns: os.Getenv(fleetNS), fence: "http://" + os.Getenv(fleetFence), cfg: conn.config()}
	switch role {
	case "client-go":
		err = ch.clientGo()
	case "baton":
		err = ch.baton()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	fmt.Fprintln(os.Stderr, "fleet child:", err)
	os.Exit(3)
}

// fleetChild is a candidate process of the fleet. It reports on standard
// output, one line an event: "lead TOKEN UNIXNS", "deadline TOKEN UNIXNS"
// (baton: the term's deadline), "stop TOKEN UNIXNS".
type fleetChild struct {
	id, ns, fence string
	cfg           *rest.Config
	mu            sync.Mutex
}

func (c *fleetChild) say(what string, token int64, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Printf("%s %d %d\n", what, token, at.UnixNano())
}

// post sends one request to the fenced register: ok false if it refused
// the token as stale.
func (c *fleetChild) post(path string) (ok bool) {
	resp, err := http.Post(c.fence+path, "text/plain", nil)
	if err != nil {
		return true // not refused: the register is the parent, it is there
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// work is the job of a term of token: raise the register to the token,
// then one fenced write per period whose start comes after that, while
// valid says the term holds; it ends at the first refusal.
func (c *fleetChild) work(ctx context.Context, token int64, valid func() bool) {
	if !c.post(fmt.Sprintf("/raise?id=%s&t=%d", c.id, token)) {
		return
	}
	k := time.Now().UnixNano()/int64(fleetPeriod) + 1
	for {
		t := time.NewTimer(time.Until(time.Unix(0, k*int64(fleetPeriod))))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !valid() {
			return
		}
		if !c.post(fmt.Sprintf("/write?id=%s&t=%d&k=%d", c.id, token, k)) {
			return
		}
		k++
	}
}

// clientGo campaigns with client-go's elector, again after each loss.
func (c *fleetChild) clientGo() error {
	cs, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		return err
	}
	for {
		var led atomic.Bool
		var token atomic.Int64
		cand := &cgCandidate{id: c.id}
		lock := &recordingLock{c: cand, Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: fleetName, Namespace: c.ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.id},
		}}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: cgLease, RenewDeadline: cgRenew, RetryPeriod: cgRetry, Name: fleetName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					tok := int64(cand.transitions.Load())
					token.Store(tok)
					led.Store(true)
					c.say("lead", tok, time.Now())
					c.work(ctx, tok, func() bool { return ctx.Err() == nil })
				},
				OnStoppedLeading: func() {
					if led.Load() {
						c.say("stop", token.Load(), time.Now())
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(context.Background())
	}
}

// baton campaigns with a baton Elector on store/kube, again after each
// term.
func (c *fleetChild) baton() error {
	ctx := context.Background()
	st, err := kube.Open(ctx, c.cfg, c.ns)
	if err != nil {
		return err
	}
	el, err := baton.New(st, fleetName, baton.WithNode(c.id), baton.WithLease(fleetLease),
		baton.WithClockMargin(fleetMargin), baton.WithPoll(fleetPoll))
	if err != nil {
		return err
	}
	for {
		term, err := el.Campaign(ctx)
		if err != nil {
			return err
		}
		token := int64(term.Token())
		c.say("lead", token, time.Now())
		go func() {
			for {
				renewed := term.Renewed()
				c.say("deadline", token, term.Deadline())
				select {
				case <-renewed:
				case <-term.Done():
					return
				}
			}
		}()
		c.work(term.Context(), token, term.Valid)
		<-term.Done()
		c.say("stop", token, time.Now())
	}
}

// register is the fenced resource of the fleet's job: it accepts a write
// only with a token at least the highest it saw, raising it, and keeps
// every write it was sent.
type register struct {
	mu      sync.Mutex
	highest int64
	writes  []regWrite
}

type regWrite struct {
	id      string
	token   int64
	period  int64 // 0: a raise
	applied bool
}

func (r *register) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	t, _ := strconv.ParseInt(q.Get("t"), 10, 64)
	k, _ := strconv.ParseInt(q.Get("k"), 10, 64)
	r.mu.Lock()
	ok := t >= r.highest
	if ok {
		r.highest = t
	}
	r.writes = append(r.writes, regWrite{id: q.Get("id"), token: t, period: k, applied: ok})
	r.mu.Unlock()
	if !ok {
		http.Error(w, "stale token", http.StatusConflict)
	}
}

// fleetProc is one candidate process, restarted after each kill.
type fleetProc struct {
	id, role string
	cmd      *exec.Cmd
	stopped  bool // SIGSTOPped now
	exited   chan struct{}
}

// term is one term of the fleet as its process reported it.
type fleetTerm struct {
	id, role      string
	token         int64
	start, end    time.Time // end: stop reported, the last deadline (baton), or the kill
	deadline      time.Time // baton: the last deadline reported
	ended, killed bool
}

// leaseWrite is one write of the Lease's spec, from the watch.
type leaseWrite struct {
	holder      string
	duration    int32
	transitions int32
	renew       time.Time
}

// testMixedFleetFaults is issue #46's mixed-fleet acceptance: three
// client-go candidate processes and three baton candidate processes on
// one Lease of the real API server, with SIGSTOP and SIGKILL faults for
// 60 s (20 s unless testenv.Long). From the Lease's writes (a watch) it
// checks that no takeover was early: a baton takeover comes at least the
// previous holder's lease (client-go: its leaseDurationSeconds; baton:
// its lease) plus 2e after that holder's last renewTime, a client-go
// takeover of a baton holder at least baton's lease after its last
// renewTime, and leaseTransitions never goes down. From the processes'
// reports it checks that no term overlaps a baton term's belief (which
// ends at its deadline), reports the overlaps that come only from a
// deposed client-go leader still believing, and checks that the job's
// writes fenced by the token (one a period) leave no period done by two
// terms.
func (e *env) testMixedFleetFaults(t *testing.T) {
	faultFor := 20 * time.Second
	if testenv.Long() {
		faultFor = 60 * time.Second
	}
	ns := e.namespace(t)
	dir := t.TempDir()
	cfg := e.srv.Config
	raw, err := json.Marshal(fleetConn{Host: cfg.Host, BearerToken: cfg.BearerToken, ServerName: cfg.ServerName,
		CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData, Insecure: cfg.Insecure})
	if err != nil {
		t.Fatal(err)
	}
	connFile := dir + "/conn.json"
	if err := os.WriteFile(connFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	reg := &register{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: reg}
	go hs.Serve(ln)
	defer hs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writes, watchDone := e.watchLease(ctx, t, ns)

	var mu sync.Mutex
	var terms []*fleetTerm
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := func(p *fleetProc) {
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), fleetRole+"="+p.role, fleetID+"="+p.id, fleetConfig+"="+connFile,
			fleetNS+"="+ns, fleetFence+"="+ln.Addr().String())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		logf, err := os.OpenFile(filepath.Join(dir, p.id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer logf.Close() // the child holds its own descriptor
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.cmd, p.stopped, p.exited = cmd, false, make(chan struct{})
		exited := p.exited
		go func() {
			defer close(exited)
			sc := bufio.NewScanner(out)
			var cur *fleetTerm
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 {
					continue
				}
				tok, _ := strconv.ParseInt(f[1], 10, 64)
				ns, _ := strconv.ParseInt(f[2], 10, 64)
				at := time.Unix(0, ns)
				mu.Lock()
				switch f[0] {
				case "lead":
					cur = &fleetTerm{id: p.id, role: p.role, token: tok, start: at}
					terms = append(terms, cur)
				case "deadline":
					if cur != nil && cur.token == tok {
						cur.deadline = at
					}
				case "stop":
					if cur != nil && cur.token == tok {
						cur.end, cur.ended = at, true
					}
				}
				mu.Unlock()
			}
			cmd.Wait()
			mu.Lock()
			if cur != nil && !cur.ended {
				cur.end, cur.ended, cur.killed = time.Now(), true, true
			}
			mu.Unlock()
		}()
	}
	var procs []*fleetProc
	for i := 1; i <= 3; i++ {
		procs = append(procs, &fleetProc{id: fmt.Sprintf("cg-%d", i), role: "client-go"}, &fleetProc{id: fmt.Sprintf("b-%d", i), role: "baton"})
	}
	for _, p := range procs {
		start(p)
	}
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-p.exited
		}
	}()

	// Faults: every 1-2 s, a process (the Lease's holder two times in
	// three) is stopped for 0.5-3 s or killed and started again 0.5 s
	// later, or (one time in five) every process of the holder's kind
	// is stopped for 2.5-3.5 s.
	seed := uint64(time.Now().UnixNano())
	t.Logf("faults for %s, seed %d", faultFor, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	holder := func() string {
		l, err := e.cs.CoordinationV1().Leases(ns).Get(ctx, fleetName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	type resume struct {
		p  *fleetProc
		at time.Time
	}
	var pending []resume
	stops, kills, groups := 0, 0, 0
	end := time.Now().Add(faultFor)
	for time.Now().Before(end) {
		time.Sleep(time.Second + time.Duration(rng.Int64N(int64(time.Second))))
		now := time.Now()
		kept := pending[:0]
		for _, r := range pending {
			if now.Before(r.at) {
				kept = append(kept, r)
				continue
			}
			if r.p.stopped {
				r.p.cmd.Process.Signal(syscall.SIGCONT)
				r.p.stopped = false
			} else {
				start(r.p)
			}
		}
		pending = kept
		var p *fleetProc
		h := holder()
		if h != "" && rng.IntN(3) < 2 {
			for _, q := range procs {
				if q.id == h {
					p = q
				}
			}
		}
		if p == nil {
			p = procs[rng.IntN(len(procs))]
		}
		busy := func(p *fleetProc) bool {
			for _, r := range pending {
				if r.p == p {
					return true
				}
			}
			return false
		}
		fault := rng.IntN(5)
		if fault == 0 {
			// The holder's whole kind stopped for longer than the Lease:
			// the other kind takes over (baton's candidates, quicker by a
			// second, would take every takeover otherwise).
			kind := kindOf(h)
			at := now.Add(2500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
			for _, q := range procs {
				if kindOf(q.id) == kind && !busy(q) {
					q.cmd.Process.Signal(syscall.SIGSTOP)
					q.stopped = true
					pending = append(pending, resume{q, at})
				}
			}
			groups++
			continue
		}
		if busy(p) {
			continue
		}
		if fault <= 2 {
			p.cmd.Process.Signal(syscall.SIGSTOP)
			p.stopped = true
			stops++
			pending = append(pending, resume{p, now.Add(500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond))))})
		} else {
			p.cmd.Process.Kill()
			<-p.exited
			kills++
			pending = append(pending, resume{p, now.Add(500 * time.Millisecond)})
		}
	}
	for _, r := range pending {
		if r.p.stopped {
			r.p.cmd.Process.Signal(syscall.SIGCONT)
			r.p.stopped = false
		} else {
			start(r.p)
		}
	}
	time.Sleep(2 * cgLease) // the last faults' takeovers
	cancel()
	<-watchDone
	for _, p := range procs {
		p.cmd.Process.Kill()
		<-p.exited
	}
	t.Logf("%d stops, %d kills, %d stops of every process of one kind", stops, kills, groups)

	mu.Lock()
	defer mu.Unlock()
	e.checkLeaseWrites(t, *writes)
	checkTerms(t, terms)
	checkRegister(t, reg)
}

// watchLease records every write of the fleet's Lease spec (a write that
// changes only annotations, such as a candidate row, is not one), until
// ctx ends.
func (e *env) watchLease(ctx context.Context, t *testing.T, ns string) (*[]leaseWrite, <-chan struct{}) {
	out := &[]leaseWrite{}
	done := make(chan struct{})
	leases := e.cs.CoordinationV1().Leases(ns)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", fleetName).String()}
	w, err := leases.Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		var last coordinationv1.LeaseSpec
		for {
			ev, ok := <-w.ResultChan()
			if !ok {
				if ctx.Err() != nil {
					return
				}
				w, err = leases.Watch(ctx, opts) // resumes at opts.ResourceVersion
				if err != nil {
					return
				}
				continue
			}
			l, isLease := ev.Object.(*coordinationv1.Lease)
			if !isLease || ev.Type == watch.Error {
				continue
			}
			opts.ResourceVersion = l.ResourceVersion
			if l.Spec.RenewTime == nil || equalSpec(last, l.Spec) {
				continue
			}
			last = l.Spec
			lw := leaseWrite{renew: l.Spec.RenewTime.Time}
			if l.Spec.HolderIdentity != nil {
				lw.holder = *l.Spec.HolderIdentity // nil: released
			}
			if l.Spec.LeaseDurationSeconds != nil {
				lw.duration = *l.Spec.LeaseDurationSeconds
			}
			if l.Spec.LeaseTransitions != nil {
				lw.transitions = *l.Spec.LeaseTransitions
			}
			*out = append(*out, lw)
		}
	}()
	return out, done
}

func equalSpec(a, b coordinationv1.LeaseSpec) bool {
	pa, pb := printSpec(a), printSpec(b)
	return pa == pb
}

func printSpec(s coordinationv1.LeaseSpec) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// checkLeaseWrites checks the takeovers in the Lease's writes: none
// early, and leaseTransitions never down.
func (e *env) checkLeaseWrites(t *testing.T, ws []leaseWrite) {
	t.Helper()
	takeovers := map[string]int{}
	var minGap = map[string]time.Duration{}
	for i := 1; i < len(ws); i++ {
		prev, cur := ws[i-1], ws[i]
		if cur.transitions < prev.transitions {
			t.Errorf("leaseTransitions went down: %d (%s) after %d (%s)", cur.transitions, cur.holder, prev.transitions, prev.holder)
		}
		if cur.holder == prev.holder || prev.holder == "" || cur.holder == "" {
			continue // a renewal, a take of a free Lease, a release
		}
		if cur.transitions <= prev.transitions {
			t.Errorf("%s took the Lease from %s with leaseTransitions %d, not above %d", cur.holder, prev.holder, cur.transitions, prev.transitions)
		}
		gap := cur.renew.Sub(prev.renew)
		kind := kindOf(prev.holder) + "->" + kindOf(cur.holder)
		takeovers[kind]++
		if g, ok := minGap[kind]; !ok || gap < g {
			minGap[kind] = gap
		}
		var least time.Duration
		switch kind {
		case "client-go->baton":
			least = time.Duration(prev.duration)*time.Second + 2*fleetMargin
		case "baton->baton":
			least = fleetLease + 2*fleetMargin
		case "baton->client-go":
			least = fleetLease
		}
		if gap < least {
			t.Errorf("early takeover (%s): %s took the Lease %s after %s's last renewal, before %s", kind, cur.holder, gap, prev.holder, least)
		}
	}
	kinds := make([]string, 0, len(takeovers))
	for k := range takeovers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("takeovers %s: %d, the shortest %s after the previous holder's last renewal", k, takeovers[k], minGap[k])
	}
	if len(ws) < 2 || len(takeovers) == 0 {
		t.Errorf("%d writes of the Lease and no takeover: the faults did not move it", len(ws))
	}
}

func kindOf(holder string) string {
	if strings.HasPrefix(holder, "b-") {
		return "baton"
	}
	return "client-go"
}

// checkTerms checks that no term overlaps a baton term's belief, and
// reports the overlaps of a client-go term's belief with a later term.
// A term's start is when its process said it leads, which for a client-go
// candidate paused between its acquiring write and its OnStartedLeading
// comes after its token was superseded: a term that starts inside
// another's but has the lower token is the stale one, and its overlap is
// its own belief, not the other's.
func checkTerms(t *testing.T, terms []*fleetTerm) {
	t.Helper()
	sort.Slice(terms, func(i, j int) bool { return terms[i].start.Before(terms[j].start) })
	var cgOverlaps int
	var cgMax, cgTotal time.Duration
	for i, a := range terms {
		end := a.end
		if a.role == "baton" && !a.deadline.IsZero() && a.deadline.Before(end) {
			end = a.deadline // a paused baton leader's term ended at its deadline
		}
		if !a.ended && a.role == "client-go" {
			continue // still leading when the processes were stopped
		}
		for _, b := range terms[i+1:] {
			if !b.start.Before(end) {
				continue
			}
			over := end.Sub(b.start)
			if b.token < a.token {
				// b acts on a token a had already superseded when b
				// began: b's stale belief (checked below as b's own if
				// b is baton's, whose deadline bounds it).
				if b.role == "baton" {
					if !b.deadline.IsZero() && !b.deadline.After(b.start) {
						continue // it said it leads after its deadline: no belief
					}
					t.Errorf("%s's term %d began at %s inside %s's later term %d (believed until %s): a baton leader acting on a superseded token", b.id, b.token, b.start.Format("15:04:05.000"), a.id, a.token, end.Format("15:04:05.000"))
					continue
				}
				cgOverlaps++
				cgTotal += over
				cgMax = max(cgMax, over)
				t.Logf("a client-go leader that began acting after it was deposed: %s's term %d from %s, inside %s's term %d (believed until %s; %s of two leaders)", b.id, b.token, b.start.Format("15:04:05.000"), a.id, a.token, end.Format("15:04:05.000"), over)
				continue
			}
			if a.role == "baton" {
				t.Errorf("%s's term %d (believed until %s) overlaps %s's term %d from %s by %s", a.id, a.token, end.Format("15:04:05.000"), b.id, b.token, b.start.Format("15:04:05.000"), over)
				continue
			}
			cgOverlaps++
			cgTotal += over
			cgMax = max(cgMax, over)
			t.Logf("a deposed client-go leader still believed: %s's term %d until %s, %s's term %d from %s (%s of two leaders)", a.id, a.token, end.Format("15:04:05.000"), b.id, b.token, b.start.Format("15:04:05.000"), over)
		}
	}
	t.Logf("%d terms; %d overlaps of a deposed client-go leader's belief with a later term (%s in all, the longest %s)", len(terms), cgOverlaps, cgTotal, cgMax)
	if len(terms) < 3 {
		t.Errorf("only %d terms reported: the faults did not move leadership", len(terms))
	}
}

// checkRegister checks that no period was done by two terms, and reports
// what the fence refused.
func checkRegister(t *testing.T, r *register) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	done := map[int64]map[int64]bool{}
	tried := map[int64]map[int64]bool{}
	refused := 0
	for _, w := range r.writes {
		if w.period == 0 {
			if !w.applied {
				refused++
			}
			continue
		}
		if tried[w.period] == nil {
			tried[w.period] = map[int64]bool{}
		}
		tried[w.period][w.token] = true
		if !w.applied {
			refused++
			continue
		}
		if done[w.period] == nil {
			done[w.period] = map[int64]bool{}
		}
		done[w.period][w.token] = true
	}
	double, wouldBe := 0, 0
	for k, toks := range done {
		if len(toks) > 1 {
			double++
			t.Errorf("period %d done by the terms of tokens %v", k, toks)
		}
	}
	for _, toks := range tried {
		if len(toks) > 1 {
			wouldBe++
		}
	}
	t.Logf("fenced register: %d writes, %d refused as stale; %d periods done, %d done twice; %d periods written by two terms (done twice without the fence)", len(r.writes), refused, len(done), double, wouldBe)
	if len(done) == 0 {
		t.Error("no period done")
	}
}

// TestCheckTermsLateClientGo: a client-go candidate paused between its
// acquiring write (token 9) and its OnStartedLeading says it leads inside
// the baton term that superseded it (token 10): its own stale belief,
// reported, not an overlap of the baton term (CI met it once, on
// 2026-12-06).
func TestCheckTermsLateClientGo(t *testing.T) {
	at := time.Date(2026, 12, 6, 15, 59, 12, 0, time.UTC)
	checkTerms(t, []*fleetTerm{
		{id: "b-2", role: "baton", token: 8, start: at.Add(-5 * time.Second), deadline: at.Add(-3 * time.Second), end: at.Add(-3 * time.Second), ended: true},
		{id: "b-3", role: "baton", token: 10, start: at, deadline: at.Add(time.Second), end: at.Add(time.Second), ended: true},
		{id: "cg-1", role: "client-go", token: 9, start: at.Add(330 * time.Millisecond), end: at.Add(1830 * time.Millisecond), ended: true},
		{id: "b-1", role: "baton", token: 11, start: at.Add(2 * time.Second), deadline: at.Add(3 * time.Second), end: at.Add(3 * time.Second), ended: true},
	})
}
