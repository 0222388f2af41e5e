package main

import (
	"flag"
	"time"

	"github.com/batonhq/baton/schedule"
)

// scheduleFlags are the flags that give a schedule: --every/--offset or
// --cron/--tz.
type scheduleFlags struct {
	every, offset time.Duration
	cron, tz      string
}

// cronRuleHelp explains the DST rule in --help texts.
const cronRuleHelp = `Around a daylight saving change a cron schedule follows cron's rule: with a
fixed hour ("30 2 * * *") it runs once per local day (a skipped local time
runs once at the first instant after the jump, a repeated one at its first
occurrence); with a wildcard or step hour ("0 * * * *", "*/15 * * * *") it
fires every real interval, so an hourly job runs 23 or 25 times that day.
Period keys are UTC instants either way.`

func (f *scheduleFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.every, "every", 0, "once per interval, aligned to the Unix epoch (whole seconds)")
	fs.DurationVar(&f.offset, "offset", 0, "with --every: shift the periods by this much, in [0, interval)")
	fs.StringVar(&f.cron, "cron", "", "at the instants of this cron expression: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly")
	fs.StringVar(&f.tz, "tz", "UTC", "with --cron: the IANA time zone the expression is read in")
}

// given reports whether any schedule flag was set.
func (f *scheduleFlags) given(set map[string]bool) bool {
	return set["every"] || set["offset"] || set["cron"] || set["tz"]
}

// parse returns the schedule the flags give, nil if none; a bad
// combination or value is a usage error naming the flag.
func (f *scheduleFlags) parse(set map[string]bool) (schedule.Schedule, error) {
	switch {
	case set["every"] && set["cron"]:
		return nil, usagef("--every and --cron exclude each other; give one")
	case set["offset"] && !set["every"]:
		return nil, usagef("--offset needs --every")
	case set["tz"] && !set["cron"]:
		return nil, usagef("--tz needs --cron")
	case set["every"]:
		s, err := schedule.Every(f.every, f.offset)
		if err != nil {
			return nil, usagef("invalid --every/--offset: %v", err)
		}
		return s, nil
	case set["cron"]:
		loc, err := time.LoadLocation(f.tz)
		if err != nil || f.tz == "" {
			return nil, usagef("invalid --tz %q: unknown time zone; want an IANA name such as Europe/Paris or UTC", f.tz)
		}
		s, err := schedule.Cron(f.cron, loc)
		if err != nil {
			return nil, usagef("invalid --cron: %v", err)
		}
		return s, reachable(s, time.Now())
	}
	return nil, nil
}

// reachable returns a usage error when s has no instant within five years
// after from (a cron expression such as "0 0 30 2 *", February 30): such a
// job would wait forever.
func reachable(s schedule.Schedule, from time.Time) error {
	if s != nil && s.Next(from).IsZero() {
		return usagef("invalid --cron: %s matches no date within five years after %s (is the day of the month in the month?); fix the expression", s, from.UTC().Format(time.RFC3339))
	}
	return nil
}
