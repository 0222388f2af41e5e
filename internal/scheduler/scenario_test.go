package scheduler_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/scenario"
	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// The scenarios in testdata/*.txt drive the machine step by step. Times are
// written D+HH:MM: day D after 2026-01-01, at HH:MM UTC. Steps:
//
//	config every=24h catchup=latest window=48h poll=1h rescan=6h retry=10m retries=2 backoff=30m momentary unfenced novalid
//	       keep=720h keeprows=100 pruneevery=10m batch=500 max=3 overlap=skip jitter=30m nocap
//	       grace=2m nograce releaseafterfinish
//	start token=2 node=n1 | end | tick | trigger [key=D+HH:MM]   (any step takes at=D+HH:MM)
//	registered created=D+HH:MM | registered err=E
//	rows r=D+HH:MM/STATE/TOKEN/vVERSION[/manual][/aATTEMPT][/fD+HH:MM] ... | rows err=E
//	swapped | swapped err=E          (ok: the row written, its version one more)
//	readback r=D+HH:MM/STATE/TOKEN/vVERSION | readback err=E
//	effect [exit=N] [err=E] | effect notstarted
//	pruned n=N | pruned err=E
//
// E is unavailable, conflict, invalid, stale, replaced, suspended, interrupted
// or boom.
// The output lists the actions, one a line, then the timer the machine
// asks for.
func TestScenarios(t *testing.T) {
	scenario.Files(t, "testdata/*.txt", func(t *testing.T) func(scenario.Step) string {
		x := &harness{t: t, now: epoch, cfg: scheduler.Config{Job: "billing", Poll: time.Hour, Rescan: 6 * time.Hour, Retry: 10 * time.Minute}}
		return x.step
	})
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t        *testing.T
	cfg      scheduler.Config
	m        *scheduler.Machine
	now      time.Time
	lastSwap store.RunSwap
	job      store.Job // what a ReadJob is answered with, at once (suspend, resume)
}

func (x *harness) time(s string) time.Time {
	d, hm, ok := strings.Cut(s, "+")
	day, err := strconv.Atoi(d)
	if !ok || err != nil {
		x.t.Fatalf("time %q: want D+HH:MM, D+HH:MM:SS or D+HH:MM:SS.mmm", s)
	}
	layout := "15:04"
	if strings.Count(hm, ":") == 2 {
		layout = "15:04:05"
	}
	c, err := time.Parse(layout, hm)
	if err != nil {
		x.t.Fatalf("time %q: %v", s, err)
	}
	return epoch.AddDate(0, 0, day).Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute +
		time.Duration(c.Second())*time.Second + time.Duration(c.Nanosecond()))
}

// fmtTime writes t as D+HH:MM, with :SS when its seconds are not zero
// and :SS.mmm when it has a fraction of a second.
func fmtTime(t time.Time) string {
	d := t.Sub(epoch)
	day := int(d / (24 * time.Hour))
	if t.Nanosecond() != 0 {
		return fmt.Sprintf("%d+%s", day, t.Format("15:04:05.000"))
	}
	if t.Second() != 0 {
		return fmt.Sprintf("%d+%s", day, t.Format("15:04:05"))
	}
	return fmt.Sprintf("%d+%s", day, t.Format("15:04"))
}

func key(t time.Time) string { return scheduler.Key(t) }

func fmtKey(k string) string {
	t, err := time.Parse(scheduler.KeyLayout, k)
	if err != nil {
		return k
	}
	return fmtTime(t)
}

func (x *harness) err(s string) error {
	if s == "interrupted" {
		return scheduler.ErrInterrupted
	}
	err, ok := scenario.Err(s)
	if !ok {
		x.t.Fatalf("unknown error %q", s)
	}
	return err
}

// row parses D+HH:MM/STATE/TOKEN/vVERSION[/manual][/aATTEMPT][/fFINISHED].
func (x *harness) row(s string) store.Run {
	f := strings.Split(s, "/")
	if len(f) < 4 {
		x.t.Fatalf("row %q: want D+HH:MM/STATE/TOKEN/vVERSION[/manual]", s)
	}
	at := x.time(f[0])
	tok, _ := strconv.ParseUint(f[2], 10, 64)
	v, _ := strconv.ParseInt(strings.TrimPrefix(f[3], "v"), 10, 64)
	r := store.Run{Job: "billing", Period: key(at), Scheduled: at, State: store.RunState(f[1]), Token: tok, Version: v, Attempt: 1}
	for _, o := range f[4:] {
		switch {
		case o == "manual":
			r.Manual = true
		case strings.HasPrefix(o, "a"):
			r.Attempt, _ = strconv.Atoi(o[1:])
		case strings.HasPrefix(o, "f"):
			r.Finished = x.time(o[1:])
		default:
			x.t.Fatalf("row %q: unknown field %q", s, o)
		}
	}
	return r
}

func (x *harness) step(s scenario.Step) string {
	if at, ok := s.Get("at"); ok {
		x.now = x.time(at)
	}
	errArg, _ := s.Get("err")
	var ev scheduler.Event
	switch s.Cmd {
	case "config":
		for _, a := range s.Args {
			d, _ := time.ParseDuration(a.Val)
			switch a.Key {
			case "every":
				x.cfg.Schedule = every(d)
			case "catchup":
				x.cfg.Policy.CatchUp = a.Val
			case "window":
				x.cfg.Policy.Window = d
			case "poll":
				x.cfg.Poll = d
			case "rescan":
				x.cfg.Rescan = d
			case "retry":
				x.cfg.Retry = d
			case "retries":
				x.cfg.Policy.Retries, _ = strconv.Atoi(a.Val)
			case "backoff":
				x.cfg.Policy.RetryBackoff = d
			case "momentary":
				x.cfg.Momentary = true
			case "unfenced":
				x.cfg.Unfenced = true
			case "novalid":
				x.cfg.Mutate.NoValidCheck = true
			case "keep":
				x.cfg.Retention.Age = d
			case "keeprows":
				x.cfg.Retention.Rows, _ = strconv.Atoi(a.Val)
			case "pruneevery":
				x.cfg.PruneEvery = d
			case "batch":
				x.cfg.PruneBatch, _ = strconv.Atoi(a.Val)
			case "max":
				x.cfg.Policy.Max, _ = strconv.Atoi(a.Val)
			case "overlap":
				x.cfg.Policy.Overlap = a.Val
			case "jitter":
				x.cfg.Policy.Jitter = d
			case "nocap":
				x.cfg.Mutate.NoCatchUpCap = true
			case "timeout":
				x.cfg.Policy.Timeout = d
			case "notimeout":
				x.cfg.Mutate.NoTimeout = true
			case "ignoresuspension":
				x.cfg.Mutate.IgnoreSuspension = true
			case "grace":
				x.cfg.TakeoverGrace = d
			case "nograce":
				x.cfg.Mutate.NoTakeoverGrace = true
			case "releaseafterfinish":
				x.cfg.Mutate.ReleaseAfterFinish = true
			default:
				x.t.Fatalf("config %s: unknown setting", a.Key)
			}
		}
		x.m = scheduler.New(x.cfg)
		return ""
	case "start":
		tok, _ := s.Get("token")
		node, _ := s.Get("node")
		n, _ := strconv.ParseUint(tok, 10, 64)
		ev = scheduler.Start{Token: n, Node: node}
	case "suspend":
		by, _ := s.Get("by")
		why, _ := s.Get("why")
		x.job.Suspension = store.Suspension{By: by, Reason: why, At: x.now}
		return ""
	case "resume":
		x.job.Suspension = store.Suspension{}
		return ""
	case "end":
		ev = scheduler.End{}
	case "tick":
		ev = scheduler.Tick{}
	case "trigger":
		tr := scheduler.Trigger{}
		if k, ok := s.Get("key"); ok {
			tr.Scheduled = x.time(k)
			tr.Key = key(tr.Scheduled)
		}
		ev = tr
	case "registered":
		r := scheduler.Registered{Err: x.err(errArg)}
		if c, ok := s.Get("created"); ok {
			r.Job = store.Job{Name: "billing", Created: x.time(c)}
		}
		ev = r
	case "rows":
		r := scheduler.RunsRead{Err: x.err(errArg)}
		for _, a := range s.Args {
			if a.Key == "r" {
				r.Rows = append(r.Rows, x.row(a.Val))
			}
		}
		ev = r
	case "swapped":
		r := scheduler.Swapped{Err: x.err(errArg)}
		if r.Err == nil {
			r.Run = x.lastSwap.Run
			r.Run.Version = x.lastSwap.Expect + 1
		}
		ev = r
	case "readback":
		r := scheduler.ReadBack{Err: x.err(errArg)}
		if v, ok := s.Get("r"); ok {
			r.Run = x.row(v)
		}
		ev = r
	case "pruned":
		r := scheduler.Pruned{Err: x.err(errArg)}
		if n, ok := s.Get("n"); ok {
			r.N, _ = strconv.Atoi(n)
		}
		ev = r
	case "effect":
		r := scheduler.EffectDone{Err: x.err(errArg)}
		if _, ok := s.Get("notstarted"); ok {
			r.NotStarted = true
		}
		if c, ok := s.Get("exit"); ok {
			r.ExitCode, _ = strconv.Atoi(c)
		}
		ev = r
	default:
		x.t.Fatalf("unknown step %q", s.Cmd)
	}
	if x.m == nil {
		x.m = scheduler.New(x.cfg)
	}
	var out []string
	acts := x.m.Step(x.now, ev)
	for i := 0; i < len(acts); i++ {
		a := acts[i]
		if _, ok := a.(scheduler.ReadJob); ok {
			// Answered at once with the job as the script set it; said
			// only while it is suspended, so that scripts without a
			// suspension read as before.
			if x.job.Suspension.Active() {
				out = append(out, "read job: suspended by "+x.job.Suspension.By)
			}
			acts = append(acts, x.m.Step(x.now, scheduler.JobRead{Job: x.job})...)
			continue
		}
		if l := x.action(a); l != "" {
			out = append(out, l)
		}
	}
	if next := x.m.Next(); !next.IsZero() {
		out = append(out, "next "+fmtTime(next))
	}
	return strings.Join(out, "\n")
}

func (x *harness) action(a scheduler.Action) string {
	switch a := a.(type) {
	case scheduler.Register:
		return "register"
	case scheduler.ReadRuns:
		if a.After == "" {
			return "read all"
		}
		return "read after " + fmtKey(a.After)
	case scheduler.SwapRun:
		x.lastSwap = a.Swap
		r := a.Swap.Run
		s := fmt.Sprintf("swap %s %s: %s token=%d attempt=%d expect=v%d", a.Kind, fmtKey(r.Period), r.State, r.Token, r.Attempt, a.Swap.Expect)
		if r.Output != "" {
			s += fmt.Sprintf(" output=%q", r.Output)
		}
		if !a.Swap.Fenced {
			s += " UNFENCED"
		}
		return s
	case scheduler.GetRun:
		return "read back " + fmtKey(a.Period)
	case scheduler.StartEffect:
		s := fmt.Sprintf("start effect %s token=%d attempt=%d", fmtKey(a.Period.Key), a.Run.Token, a.Run.Attempt)
		if a.RequireValid {
			s += " if valid"
		}
		return s
	case scheduler.Prune:
		p := a.Prune
		s := fmt.Sprintf("prune %v below=%s keep=%d limit=%d token=%d", p.States, fmtKey(p.Before), p.Keep, p.Limit, p.Token)
		if !p.Fenced {
			s += " UNFENCED"
		}
		return s
	case scheduler.StopEffect:
		return "stop effect: " + a.Cause.Error()
	case scheduler.Halt:
		return "halt: " + a.Cause.Error()
	case scheduler.Fail:
		return "fail: " + a.Err.Error()
	}
	return "" // notes are for logs
}

type every time.Duration

func (e every) Next(t time.Time) time.Time {
	d := time.Duration(e)
	return t.Truncate(d).Add(d)
}
