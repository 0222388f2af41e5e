package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/lab/model"
	"github.com/batonhq/baton/store"
)

// intList is a flag.Value holding a comma-separated list of integers such as
// "6,12,18,24". Setting it replaces the whole list; an empty string sets an
// empty list.
type intList []int

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(s string) error {
	var out []int
	if strings.TrimSpace(s) != "" {
		for _, item := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(item))
			if err != nil {
				return fmt.Errorf("%q is not an integer; want a comma-separated list of integers such as 6,12,18", item)
			}
			out = append(out, v)
		}
	}
	*l = out
	return nil
}

// flagsSet returns the names of the flags given on the command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// required returns a usage error for the first of names that is not in
// set (the flags given), "missing --NAME; " followed by why, or nil.
func required(set map[string]bool, why string, names ...string) error {
	for _, n := range names {
		if !set[n] {
			return usagef("missing --%s; %s", n, why)
		}
	}
	return nil
}

// noArgs returns a usage error for the first positional argument left in fs.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q; this command takes flags only", fs.Arg(0))
	}
	return nil
}

// asUsage turns an error naming a field as its flag is named (a
// model.FieldError, or the baton.OptionError of a constructor, such as
// schedule.CheckOptions) into a usage error naming the flag and what it
// allows; other errors pass through.
func asUsage(err error) error {
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return usagef("invalid --%s %s; want %s", fe.Field, fe.Got, fe.Want)
	}
	var oe *baton.OptionError
	if errors.As(err, &oe) {
		return usagef("invalid --%s %s; want %s", oe.Option, oe.Got, oe.Want)
	}
	return err
}

// parseMixed parses args with fs, allowing flags after positional
// arguments too (as in "resign billing --token 7"), and returns the
// positional arguments. done and code are as for env.parse.
func (e *env) parseMixed(fs *flag.FlagSet, args []string) (pos []string, done bool, code int) {
	for {
		if done, code := e.parse(fs, args); done {
			return nil, true, code
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, false, exitOK
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseNoArgs parses args with fs for command cmd, which takes flags only.
// done and code are as for env.parse; a positional argument is a usage
// error, printed.
func (e *env) parseNoArgs(cmd string, fs *flag.FlagSet, args []string) (done bool, code int) {
	if done, code := e.parse(fs, args); done {
		return true, code
	}
	if err := noArgs(fs); err != nil {
		return true, e.fail(cmd, err)
	}
	return false, exitOK
}

// parseName parses args with fs for command cmd, which takes one
// positional argument what (NAME or JOB), flags before or after it, and
// returns it (see oneName). done and code are as for env.parse; a missing,
// extra or invalid argument is a usage error, printed.
func (e *env) parseName(cmd string, fs *flag.FlagSet, args []string, what string) (name string, done bool, code int) {
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return "", true, code
	}
	name, err := oneName(pos, what)
	if err != nil {
		return "", true, e.fail(cmd, err)
	}
	return name, false, exitOK
}

// oneName returns the single NAME positional argument of cmd.
func oneName(pos []string, what string) (string, error) {
	switch {
	case len(pos) == 0:
		return "", usagef("missing %s", what)
	case len(pos) > 1:
		return "", usagef("unexpected argument %q; want one %s", pos[1], what)
	case pos[0] == "":
		return "", usagef("%s must not be empty", what)
	}
	if err := checkName(what, pos[0]); err != nil {
		return "", err
	}
	return pos[0], nil
}

// checkName returns a usage error unless name is a valid election or job
// name (printable characters only; see store.CheckName).
func checkName(what, name string) error {
	if err := store.CheckName(name); err != nil {
		return usagef("invalid %s: %v", what, err)
	}
	return nil
}

// parseTimeFlag parses the value s of the time flag name (--from, --to)
// with bound.ParseInstant, the parser of every time flag, against now;
// a bad value is a usage error naming the flag.
func parseTimeFlag(name, s string, now time.Time) (time.Time, error) {
	t, err := bound.ParseInstant(s, now)
	if err != nil {
		return time.Time{}, usagef("invalid --%s: %v", name, err)
	}
	return t, nil
}

// durationValue is a duration flag's value that reports a bad value with
// bound.ParseDuration's error.
type durationValue struct{ flag.Value }

func (d durationValue) Set(s string) error {
	if _, err := bound.ParseDuration(s); err != nil {
		return err
	}
	return d.Value.Set(s)
}

// withDurationErrors makes every duration flag of fs (flag.DurationVar)
// report a bad value with bound.ParseDuration's error until restore is
// called (which puts the flag package's own values back, so that --help
// still names their type).
func withDurationErrors(fs *flag.FlagSet) (restore func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				orig[f] = f.Value
				f.Value = durationValue{f.Value}
			}
		}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}
