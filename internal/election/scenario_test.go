package election_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/internal/lab/scenario"
	"github.com/batonhq/baton/store"
)

// The scenarios in testdata/*.txt drive the machine step by step, on the
// node's own clock (at=1.5s: 1.5s after its start). Steps:
//
//	config lease=3s renew=1s margin=150ms poll=250ms retry=250ms node=n1 inc=n1.1
//	start [hold] | tick | changed [v=V] | resign [token=N]  (any step takes at=D)
//	get holder=N inc=I token=T v=V [lease=D] [transfer=N] | get free token=T v=V | get err=E
//	swap | swap err=E     (ok: the record written, its version one more)
//
// E is notfound, unavailable or conflict. The output lists the actions,
// one a line, then the timer the machine asks for.
func TestScenarios(t *testing.T) {
	scenario.Files(t, "testdata/*.txt", func(t *testing.T) func(scenario.Step) string {
		x := &harness{t: t, cfg: election.Config{Name: "billing", Node: "n1", Incarnation: "n1.1",
			Lease: 3 * time.Second, Renew: time.Second, Margin: 150 * time.Millisecond,
			Poll: 250 * time.Millisecond, Retry: 250 * time.Millisecond}}
		return x.step
	})
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t        *testing.T
	cfg      election.Config
	m        *election.Machine
	now      time.Time
	lastSwap store.Swap
}

func since(t time.Time) string { return t.Sub(t0).String() }

func (x *harness) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		x.t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

func (x *harness) err(s string) error {
	err, ok := scenario.Err(s)
	if !ok {
		x.t.Fatalf("unknown error %q", s)
	}
	return err
}

func (x *harness) step(s scenario.Step) string {
	if at, ok := s.Get("at"); ok {
		x.now = t0.Add(x.dur(at))
	}
	errArg, _ := s.Get("err")
	var ev election.Event
	switch s.Cmd {
	case "config":
		for _, a := range s.Args {
			switch a.Key {
			case "lease":
				x.cfg.Lease = x.dur(a.Val)
			case "renew":
				x.cfg.Renew = x.dur(a.Val)
			case "margin":
				x.cfg.Margin = x.dur(a.Val)
			case "poll":
				x.cfg.Poll = x.dur(a.Val)
			case "retry":
				x.cfg.Retry = x.dur(a.Val)
			case "node":
				x.cfg.Node = a.Val
			case "inc":
				x.cfg.Incarnation = a.Val
			default:
				x.t.Fatalf("config %s: unknown setting", a.Key)
			}
		}
		x.m = election.New(x.cfg)
		return ""
	case "start":
		_, hold := s.Get("hold")
		ev = election.Start{Hold: hold}
	case "tick":
		ev = election.Tick{}
	case "changed":
		c := election.Changed{}
		if v, ok := s.Get("v"); ok {
			c.Version, _ = strconv.ParseInt(v, 10, 64)
		}
		ev = c
	case "resign":
		tok, _ := s.Get("token")
		n, _ := strconv.ParseUint(tok, 10, 64)
		ev = election.Resign{Token: n}
	case "get":
		r := election.GetReply{Err: x.err(errArg)}
		if r.Err == nil {
			r.Record = store.Record{Name: "billing", Lease: x.cfg.Lease}
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
				case "transfer":
					r.Record.Transfer = a.Val
				}
			}
		}
		ev = r
	case "swap":
		r := election.SwapReply{Err: x.err(errArg)}
		if r.Err == nil {
			r.Record = x.lastSwap.Record
			r.Record.Version = x.lastSwap.Expect + 1
		}
		ev = r
	default:
		x.t.Fatalf("unknown step %q", s.Cmd)
	}
	if x.m == nil {
		x.m = election.New(x.cfg)
	}
	var out []string
	for _, a := range x.m.Step(x.now, ev) {
		out = append(out, x.action(a))
	}
	if next := x.m.Next(); !next.IsZero() {
		out = append(out, "next "+since(next))
	}
	return strings.Join(out, "\n")
}

func (x *harness) action(a election.Action) string {
	switch a := a.(type) {
	case election.Get:
		return "get " + a.Name
	case election.Swap:
		x.lastSwap = a.Swap
		r := a.Swap.Record
		holder := r.Holder
		if holder == "" {
			holder = "(free)"
		}
		s := fmt.Sprintf("swap expect=v%d: holder=%s token=%d", a.Swap.Expect, holder, r.Token)
		if r.Transfer != "" {
			s += " transfer=" + r.Transfer
		}
		if a.Swap.Event != "" {
			s += fmt.Sprintf(" event=%s", a.Swap.Event)
		}
		return s
	case election.Elected:
		return fmt.Sprintf("elected token=%d valid until %s", a.Token, since(a.Deadline))
	case election.Extended:
		return "extended until " + since(a.Deadline)
	case election.Lost:
		return "lost: " + a.Cause.Error()
	case election.Released:
		if a.Err != nil {
			return "released: " + a.Err.Error()
		}
		return "released"
	case election.Idle:
		return "idle"
	case election.Failed:
		return "failed: " + a.Err.Error()
	}
	return fmt.Sprintf("%T", a)
}
