package explore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/lab/scenario"
)

// replayer returns the step function of package scenario that replays a
// script Script wrote; fail is called on a step it cannot execute.
func replayer(fail func(format string, a ...any)) func(scenario.Step) string {
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
		if err == nil && (int(ev.Node) >= len(w.nodes) || (ev.Kind == evTick && !w.nodes[ev.Node].up)) {
			err = errors.New("no such node, or not up")
		}
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
