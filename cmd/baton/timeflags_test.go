package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// Every time flag (backfill --from/--to, next --from, verify --from/--to)
// takes RFC 3339, a date (midnight UTC) or an offset from now (-3d, -12h)
// through one parser, and refuses an out-of-range value with one line,
// exit 2, before anything is read or written.
func TestTimeFlagsOneParser(t *testing.T) {
	e, out, errb, ms := shared()
	now := time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "daily", Schedule: `cron "0 2 * * *" in UTC; catch-up all, max 100`}); err != nil {
		t.Fatal(err)
	}
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append(args, "--store", "mem:"))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}
	// The same range three ways: 2026-03-01 02:00, 03-02 and 03-03.
	for _, rng := range [][]string{
		{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-04T00:00:00Z"},
		{"--from", "2026-03-01", "--to", "2026-03-04"},
		{"--from", "-4d", "--to", "-24h"},
	} {
		r := do(append(append([]string{"backfill"}, rng...), "--plan", "daily")...)
		if r.code != exitOK || !strings.Contains(r.stdout, "2026-03-01T02:00:00Z  add") || !strings.Contains(r.stdout, "3 periods: 3 added") {
			t.Errorf("backfill %q --plan:\n%s", rng, r)
		}
	}
	for _, tc := range []struct{ from, want string }{
		{"2026-03-27", "2026-03-27T00:00:00Z"},
		{"2026-03-27T01:00:00+01:00", "2026-03-27T00:00:00Z"},
		{"-12h", "2026-03-04T12:00:00Z"},
		{"+1d", "2026-03-06T00:00:00Z"},
	} {
		r := do("next", "--every", "1h", "--count", "1", "--from", tc.from)
		if r.code != exitOK || !strings.Contains(r.stdout, "\nfrom:      "+tc.want+"\n") {
			t.Errorf("next --from %s: want from %s:\n%s", tc.from, tc.want, r)
		}
	}
	for _, v := range []string{"-3d", "2026-03-01"} {
		if r := do("verify", "--from", v, "daily"); r.code == exitUsage {
			t.Errorf("verify --from %s refused:\n%s", v, r)
		}
	}
	for _, bad := range []string{"2026-13-01", "2026-02-30", "1969-12-31", "9999-12-31T23:59:59Z", "-99999999999999999d", "-9999999h", "yesterday"} {
		for _, args := range [][]string{
			{"backfill", "--plan", "--from", bad, "--to", "2026-03-04", "daily"},
			{"backfill", "--plan", "--from", "2026-03-01", "--to", bad, "daily"},
			{"next", "--every", "1h", "--from", bad},
			{"verify", "--from", bad, "daily"},
			{"verify", "--to", bad, "daily"},
		} {
			r := do(args...)
			flag := "--from"
			if strings.Contains(strings.Join(args, " "), "--to "+bad) {
				flag = "--to"
			}
			if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "invalid "+flag+": \""+bad+"\"") {
				t.Errorf("baton %q: want exit 2 and one line naming %s:\n%s", args, flag, r)
			}
		}
	}
}
