package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/model"
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

// noArgs returns a usage error for the first positional argument left in fs.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q; this command takes flags only", fs.Arg(0))
	}
	return nil
}

// asUsage turns a model.FieldError, whose field is named like its flag, into
// a usage error naming the flag and what it allows; other errors pass through.
func asUsage(err error) error {
	var fe *model.FieldError
	if errors.As(err, &fe) {
		return usagef("invalid --%s %s; want %s", fe.Field, fe.Got, fe.Want)
	}
	return err
}
