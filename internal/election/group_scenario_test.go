package election_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/scenario"
	"github.com/batonhq/baton/store"
)

// The scenarios in testdata/group/*.txt drive a Group (the machine that
// baton.Group, baton.Elector and the simulator's nodes drive) step by
// step, like TestScenarios a single Machine; every event and action names
// its record. Steps:
//
//	config sessions balance succession ordered lease=3s renew=1s margin=150ms poll=250ms check=3s node=n1 inc=n1.1
//	start name=N [hold] | tick | feed [live] | changed name=N v=V | resign [name=N token=T]  (any step takes at=D)
//	get name=N holder=H inc=I token=T v=V [lease=D] [session=S] [transfer=X] | get name=N free token=T v=V | get name=N err=E
//	swap name=N [v=V] | swap name=N err=E   (ok: the record the group last wrote for N, its version one more or V)
//	synced v=V   (a batch of an ordered feed reported every write up to V: config ordered)
//	listed session=S names=A,B token=T v=V [via=S] [transfer=X] | listed session=S err=E   (a page of the records held through S)
//	(config succession; get takes via=S and successor=S too)
//
// A session record's name is written @self for this node's current
// session. The output lists the actions, one a line, then the timer.
func TestGroupScenarios(t *testing.T) {
	scenario.Files(t, "testdata/group/*.txt", func(t *testing.T) func(scenario.Step) string {
		return (&groupHarness{t: t, cfg: election.Config{Node: "n1", Incarnation: "n1.1",
			Lease: 3 * time.Second, Renew: time.Second, Margin: 150 * time.Millisecond,
			Poll: 250 * time.Millisecond, Retry: 250 * time.Millisecond}, swaps: map[string]store.Swap{}}).step
	})
}

type groupHarness struct {
	t        *testing.T
	cfg      election.Config
	sessions bool
	g        *election.Group
	now      time.Time
	swaps    map[string]store.Swap // the last write of each record
}

func (x *groupHarness) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		x.t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// name resolves @self to this node's session record.
func (x *groupHarness) name(s scenario.Step) string {
	n, ok := s.Get("name")
	if !ok {
		x.t.Fatalf("%s: want name=", s.Line)
	}
	return x.resolve(n)
}

func (x *groupHarness) resolve(n string) string {
	if n == "@self" && x.g != nil {
		if sess, _ := x.g.Session(); sess != "" {
			return sess
		}
	}
	return n
}

func (x *groupHarness) short(n string) string {
	if x.g != nil {
		if sess, _ := x.g.Session(); sess != "" && n == sess {
			return "@self"
		}
	}
	return n
}

func (x *groupHarness) step(s scenario.Step) string {
	if at, ok := s.Get("at"); ok {
		x.now = t0.Add(x.dur(at))
	}
	errArg, _ := s.Get("err")
	var failure error
	if errArg != "" {
		var ok bool
		if failure, ok = scenario.Err(errArg); !ok {
			x.t.Fatalf("unknown error %q", errArg)
		}
	}
	var ev election.Event
	switch s.Cmd {
	case "config":
		for _, a := range s.Args {
			switch a.Key {
			case "sessions":
				x.sessions = true
			case "balance":
				x.cfg.Balance = true
			case "succession":
				x.cfg.Succession = true
			case "ordered":
				x.cfg.OrderedFeed = true
			case "lease":
				x.cfg.Lease = x.dur(a.Val)
			case "renew":
				x.cfg.Renew = x.dur(a.Val)
			case "margin":
				x.cfg.Margin = x.dur(a.Val)
			case "poll":
				x.cfg.Poll = x.dur(a.Val)
			case "check":
				x.cfg.Check = x.dur(a.Val)
			case "node":
				x.cfg.Node = a.Val
			case "inc":
				x.cfg.Incarnation = a.Val
			default:
				x.t.Fatalf("config %s: unknown setting", a.Key)
			}
		}
		x.g = election.NewGroup(x.cfg, x.sessions)
		return ""
	case "start":
		_, hold := s.Get("hold")
		ev = election.Start{Name: x.name(s), Hold: hold}
	case "tick":
		ev = election.Tick{}
	case "feed":
		_, live := s.Get("live")
		ev = election.Feed{Live: live}
	case "changed":
		v, _ := s.Get("v")
		n, _ := strconv.ParseInt(v, 10, 64)
		ev = election.Changed{Name: x.name(s), Version: n}
	case "synced":
		v, _ := s.Get("v")
		n, _ := strconv.ParseInt(v, 10, 64)
		ev = election.Synced{Version: n}
	case "resign":
		r := election.Resign{}
		if _, ok := s.Get("name"); ok {
			r.Name = x.name(s)
		}
		tok, _ := s.Get("token")
		r.Token, _ = strconv.ParseUint(tok, 10, 64)
		ev = r
	case "get":
		name := x.name(s)
		r := election.GetReply{Name: name, Err: failure}
		if r.Err == nil {
			r.Record = store.Record{Name: name, Lease: x.cfg.Lease}
			for _, a := range s.Args {
				switch a.Key {
				case "holder":
					r.Record.Holder = a.Val
				case "inc":
					r.Record.Incarnation = a.Val
				case "token":
					r.Record.Token, _ = strconv.ParseUint(a.Val, 10, 64)
				case "v":
					r.Record.Version, _ = strconv.ParseInt(a.Val, 10, 64)
				case "lease":
					r.Record.Lease = x.dur(a.Val)
				case "session":
					r.Record.Session = x.resolve(a.Val)
				case "transfer":
					r.Record.Transfer = a.Val
				case "via":
					r.Record.Via = x.resolve(a.Val)
				case "successor":
					r.Record.Successor = x.resolve(a.Val)
				}
			}
		}
		ev = r
	case "listed":
		// The records held through this group's session (session=@self),
		// passed on by a succession from via=S if given: names=A,B at
		// token=T v=V, asking for a transfer to transfer=X if given.
		sess, _ := s.Get("session")
		names, _ := s.Get("names")
		tok, _ := s.Get("token")
		v, _ := s.Get("v")
		via, _ := s.Get("via")
		transfer, _ := s.Get("transfer")
		token, _ := strconv.ParseUint(tok, 10, 64)
		version, _ := strconv.ParseInt(v, 10, 64)
		r := election.ListReply{Session: x.resolve(sess), Err: failure}
		self, _ := x.g.Session()
		for _, n := range strings.Split(names, ",") {
			if n != "" && failure == nil {
				r.Records = append(r.Records, store.Record{Name: n, Holder: x.cfg.Node, Incarnation: x.cfg.Incarnation,
					Token: token, Lease: x.cfg.Lease, Session: self, Via: x.resolve(via), Transfer: transfer, Version: version})
			}
		}
		ev = r
	case "swap":
		name := x.name(s)
		r := election.SwapReply{Name: name, Err: failure}
		if r.Err == nil {
			sw, ok := x.swaps[name]
			if !ok {
				x.t.Fatalf("swap %s: the group wrote no such record", name)
			}
			r.Record = sw.Record
			r.Record.Version = sw.Expect + 1
			if v, ok := s.Get("v"); ok {
				r.Record.Version, _ = strconv.ParseInt(v, 10, 64)
			}
			if r.Record.Successor != "" {
				// As a store fills them in: the successor is this
				// group's session.
				r.Record.SuccessorHolder, r.Record.SuccessorIncarnation = x.cfg.Node, x.cfg.Incarnation
			}
		}
		ev = r
	default:
		x.t.Fatalf("unknown step %q", s.Cmd)
	}
	if x.g == nil {
		x.g = election.NewGroup(x.cfg, x.sessions)
	}
	var out []string
	for _, a := range x.g.Step(x.now, ev) {
		out = append(out, x.action(a))
	}
	if next := x.g.Next(); !next.IsZero() {
		out = append(out, "next "+since(next))
	}
	// The group lists the actions of different names in map order: they
	// are sorted by the record they are about, each record's own actions
	// in their order (as the simulator makes them canonical).
	head, tail := out, []string(nil)
	if n := len(out); n > 0 && strings.HasPrefix(out[n-1], "next ") {
		head, tail = out[:n-1], out[n-1:]
	}
	slices.SortStableFunc(head, func(a, b string) int { return strings.Compare(about(a), about(b)) })
	return strings.Join(append(head, tail...), "\n")
}

// about is the record a rendered action is about: its second word.
func about(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return ""
	}
	return strings.TrimSuffix(f[1], ":")
}

func (x *groupHarness) action(a election.Action) string {
	switch a := a.(type) {
	case election.Get:
		return "get " + x.short(a.Name)
	case election.Swap:
		x.swaps[a.Swap.Record.Name] = a.Swap
		r := a.Swap.Record
		holder := r.Holder
		if holder == "" {
			holder = "(free)"
		}
		s := fmt.Sprintf("swap %s expect=v%d: holder=%s token=%d", x.short(r.Name), a.Swap.Expect, holder, r.Token)
		if r.Session != "" {
			s += " session=" + x.short(r.Session)
		}
		if r.Transfer != "" {
			s += " transfer=" + r.Transfer
		}
		if r.Successor != "" {
			s += " successor=" + x.short(r.Successor)
		}
		if a.Swap.Event != "" {
			s += fmt.Sprintf(" event=%s", a.Swap.Event)
		}
		return s
	case election.Elected:
		return fmt.Sprintf("elected %s token=%d valid until %s", a.Name, a.Token, since(a.Deadline))
	case election.Extended:
		if a.Name == "" {
			return "extended (session) until " + since(a.Deadline)
		}
		return "extended " + a.Name + " until " + since(a.Deadline)
	case election.Lost:
		return "lost " + a.Name + ": " + a.Cause.Error()
	case election.Released:
		if a.Err != nil {
			return "released " + a.Name + ": " + a.Err.Error()
		}
		return "released " + a.Name
	case election.List:
		return "list " + x.short(a.Session) + " after=" + a.After
	case election.Idle:
		return "idle"
	case election.Failed:
		return "failed " + a.Name + ": " + a.Err.Error()
	}
	return fmt.Sprintf("%T", a)
}
