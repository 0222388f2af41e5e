package explore

import (
	"fmt"
	"strings"
)

// Script replays path on c from its initial state and returns it as a
// scenario script (package scenario's format) whose last step shows the
// violation: every step an event, its output what the machines, the
// store and the fence did. Replaying the script gives the same outputs,
// byte for byte (this package's tests replay every mutation's script with
// package scenario's runner, which is a test's and is not linked here). It
// fails if the replay does not reach the violation want (nil: none), a
// check that the exploration's cloned states are the states a run from
// the start reaches.
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
	b.WriteString("# Replay: package scenario's runner with internal/lab/explore's replayer (its tests).\n")
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
