package explore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/scenario"
)

// Script replays path on c from its initial state and returns it as a
// scenario script (package scenario's format) whose last step shows the
// violation: every step an event, its output what the machines, the
// store and the fence did. Replaying the script with Replayer gives the
// same outputs, byte for byte. It fails if the replay does not reach the
// violation want (nil: none), a check that the exploration's cloned states
// are the states a run from the start reaches.
func Script(c Config, p []Event, want error) (string, error) {
	var b strings.Builder
	cmd := "baton explore --config " + c.Name
	if c.Mutate.Name != "" {
		cmd += " --mutate " + c.Mutate.Name
	}
	fmt.Fprintf(&b, "# %s\n", cmd)
	if want != nil {
		fmt.Fprintf(&b, "# violation after %d events (a shortest path): %s\n", len(p), oneLine(want.Error()))
	}
	b.WriteString("# Replay: the scenario runner with explore.Replayer (go test ./internal/lab/explore).\n")
	line := "config name=" + c.Name
	if c.Mutate.Name != "" {
		line += " mutate=" + c.Mutate.Name
	}
	var out strings.Builder
	w := newWorld(&c, &out)
	writeStep(&b, line, out.String())
	var got error
	for k, ev := range p {
		out.Reset()
		err := w.do(ev, &out)
		if err != nil {
			w.say(&out, "violation: %s", oneLine(err.Error()))
			if k != len(p)-1 {
				return "", fmt.Errorf("explore: the replay broke an invariant at event %d of %d: %v", k+1, len(p), err)
			}
			got = err
		}
		writeStep(&b, ev.line(), out.String())
	}
	if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
		return "", fmt.Errorf("explore: the replay of the path ends in %v, the exploration in %v", got, want)
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

func writeStep(b *strings.Builder, line, out string) {
	fmt.Fprintf(b, "%s\n----\n", line)
	if out != "" {
		b.WriteString(out + "\n")
	}
	b.WriteString("\n")
}

// oneLine keeps a message on one line of a script.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// Replayer returns the step function of package scenario that replays a
// script Script wrote; fail is called on a step it cannot execute.
func Replayer(fail func(format string, a ...any)) func(scenario.Step) string {
	var w *world
	var c Config
	return func(s scenario.Step) string {
		var out strings.Builder
		if s.Cmd == "config" {
			n, _ := s.Get("name")
			var ok bool
			if c, ok = Lookup(n); !ok {
				fail("config %q: no such configuration", n)
				return ""
			}
			if m, ok := s.Get("mutate"); ok {
				var err error
				if c, err = c.Mutated(m); err != nil {
					fail("%v", err)
					return ""
				}
			}
			w = newWorld(&c, &out)
			return out.String()
		}
		if w == nil {
			fail("%s: no config step before it", s.Line)
			return ""
		}
		ev, err := parseEvent(s)
		if err != nil {
			fail("%s: %v", s.Line, err)
			return ""
		}
		if err := w.do(ev, &out); err != nil {
			w.say(&out, "violation: %s", oneLine(err.Error()))
		}
		return out.String()
	}
}

func parseEvent(s scenario.Step) (Event, error) {
	var ev Event
	k := -1
	for i, n := range kindNames {
		if n == s.Cmd {
			k = i
		}
	}
	if k < 0 {
		return ev, errors.New("unknown event")
	}
	ev.Kind = kind(k)
	for _, a := range s.Args {
		switch a.Key {
		case "n", "i":
			v, err := strconv.ParseInt(a.Val, 10, 8)
			if err != nil || v < 0 {
				return ev, fmt.Errorf("%s=%q: want a small number", a.Key, a.Val)
			}
			if a.Key == "n" {
				ev.Node = int8(v)
			} else {
				ev.Idx = int8(v)
			}
		case "to":
			d, err := time.ParseDuration(a.Val)
			if err != nil {
				return ev, err
			}
			ev.To = d
		default:
			return ev, fmt.Errorf("unknown argument %q", a.Key)
		}
	}
	return ev, nil
}
