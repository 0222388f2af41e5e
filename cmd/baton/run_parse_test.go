package main

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/schedule"
)

// runDefaults is what parseRun gives for "JOB -- true" and no flags: the
// documented defaults of every flag.
func runDefaults() runFlags {
	return runFlags{
		set:   map[string]bool{},
		lease: baton.DefaultLease, margin: baton.DefaultMargin, grace: 5 * time.Second,
		sched:   scheduleFlags{tz: "UTC"},
		catchUp: "all", catchUpMax: schedule.DefaultCatchUpMax, overlap: string(schedule.OverlapQueue),
		clockTolerance: schedule.DefaultClockTolerance, clockStepDown: schedule.DefaultClockStepDown, retryBackoff: 10 * time.Second,
		wait: -1, restart: string(restartAlways),
		keep: "30d", keepRows: schedule.DefaultRetention.Rows,
		logs: logConfig{format: "text", level: "info"},
		pref: preferFlags{prefer: "none"},
		job:  "j", argv: []string{"true"},
	}
}

// The parse step turns the arguments into runFlags as typed, and refuses
// a bad flag or a malformed JOB -- COMMAND with one exact line, exit 2.
func TestParseRun(t *testing.T) {
	good := []struct {
		name string
		args []string
		want func(*runFlags)
	}{
		{"defaults", []string{"j", "--", "true"}, func(*runFlags) {}},
		{"command with flags of its own", []string{"j", "--", "sh", "-c", "exit 3"}, func(f *runFlags) {
			f.argv = []string{"sh", "-c", "exit 3"}
		}},
		{"scheduled", []string{"--every", "1m", "--offset", "5s", "--jitter", "2s", "--retries", "2", "--keep", "7d", "j", "--", "true"}, func(f *runFlags) {
			f.sched.every, f.sched.offset, f.jitter, f.retries, f.keep = time.Minute, 5*time.Second, 2*time.Second, 2, "7d"
			f.set = map[string]bool{"every": true, "offset": true, "jitter": true, "retries": true, "keep": true}
		}},
		{"preference", []string{"--every", "1s", "--weight", "10", "--candidate-label", "zone=eu-1", "--candidate-label", "disk=ssd", "--candidate-version", "1.4.2",
			"--prefer", "highest-weight", "--prefer-hysteresis", "1m", "j", "--", "true"}, func(f *runFlags) {
			f.sched.every = time.Second
			f.pref = preferFlags{weight: 10, labels: labelList{"zone=eu-1", "disk=ssd"}, version: "1.4.2", prefer: "highest-weight", hysteresis: time.Minute}
			f.set = map[string]bool{"every": true, "weight": true, "candidate-label": true, "candidate-version": true, "prefer": true, "prefer-hysteresis": true}
		}},
		{"cron", []string{"--cron", "0 2 * * *", "--tz", "Europe/Paris", "--catch-up", "latest", "j", "--", "true"}, func(f *runFlags) {
			f.sched.cron, f.sched.tz, f.catchUp = "0 2 * * *", "Europe/Paris", "latest"
			f.set = map[string]bool{"cron": true, "tz": true, "catch-up": true}
		}},
		{"once", []string{"--once", "--wait", "0s", "--node", "n1", "--store", "mem:", "j", "--", "true"}, func(f *runFlags) {
			f.once, f.wait, f.node, f.storeURL = true, 0, "n1", "mem:"
			f.set = map[string]bool{"once": true, "wait": true, "node": true, "store": true}
		}},
		{"timing and output", []string{"--lease", "9s", "--renew", "2s", "--clock-margin", "0s", "--grace", "1s",
			"--log-format", "json", "--metrics-addr", ":0", "--fence-key-file", "k.hex", "--reschedule", "j", "--", "true"}, func(f *runFlags) {
			f.lease, f.renew, f.margin, f.grace = 9*time.Second, 2*time.Second, 0, time.Second
			f.logs.format, f.metricsAddr, f.fenceKey, f.reschedule = "json", ":0", "k.hex", true
			f.set = map[string]bool{"lease": true, "renew": true, "clock-margin": true, "grace": true,
				"log-format": true, "metrics-addr": true, "fence-key-file": true, "reschedule": true}
		}},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got, done, code := parseRun(&env{stdout: &out, stderr: &errb}, tc.args)
			want := runDefaults()
			tc.want(&want)
			if done || code != exitOK || errb.Len() > 0 {
				t.Fatalf("parseRun(%q): done %v, exit %d, stderr %q", tc.args, done, code, errb.String())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parseRun(%q)\n got %+v\nwant %+v", tc.args, got, want)
			}
		})
	}

	bad := []struct {
		args []string
		line string
	}{
		{[]string{}, "baton run: missing JOB; want JOB -- COMMAND [ARGS...]\n"},
		{[]string{"--", "true"}, "baton run: missing JOB before --; want JOB -- COMMAND [ARGS...]\n"},
		{[]string{"--every", "1m", "--", "echo", "hi"}, "baton run: missing JOB before --; want JOB -- COMMAND [ARGS...]\n"},
		{[]string{"j"}, "baton run: missing COMMAND; want JOB -- COMMAND [ARGS...] (the -- is required)\n"},
		{[]string{"j", "true"}, "baton run: missing COMMAND; want JOB -- COMMAND [ARGS...] (the -- is required)\n"},
		{[]string{"j", "--"}, "baton run: missing COMMAND after --\n"},
		{[]string{"j", "--every", "1m", "--", "true"}, "baton run: unexpected \"--every\" after JOB; flags go before JOB\n"},
		{[]string{"", "--", "true"}, "baton run: JOB must not be empty\n"},
		{[]string{"--bogus", "j", "--", "true"}, "baton run: flag provided but not defined: --bogus (see 'baton run --help')\n"},
		{[]string{"--lease", "15", "j", "--", "true"}, "baton run: invalid value \"15\" for flag --lease: \"15\" needs a unit, e.g. 15s (see 'baton run --help')\n"},
		{[]string{"--wait", "x", "j", "--", "true"}, "baton run: invalid value \"x\" for flag --wait: \"x\" is not a duration; want a number with a unit, e.g. 5s, 1m30s or 2h (see 'baton run --help')\n"},
		{[]string{"--lease", "9999999h", "j", "--", "true"}, "baton run: invalid value \"9999999h\" for flag --lease: \"9999999h\" is out of range: a duration is at most 2562047h47m16.854775807s (about 292 years) (see 'baton run --help')\n"},
		{[]string{"--lease", "1.5.5h", "j", "--", "true"}, "baton run: invalid value \"1.5.5h\" for flag --lease: \"1.5.5h\" is not a duration; want a number with a unit, e.g. 5s, 1m30s or 2h (see 'baton run --help')\n"},
	}
	for _, tc := range bad {
		var out, errb bytes.Buffer
		_, done, code := parseRun(&env{stdout: &out, stderr: &errb}, tc.args)
		if !done || code != exitUsage || errb.String() != tc.line {
			t.Errorf("parseRun(%q): done %v, exit %d, stderr %q; want exit 2 and %q", tc.args, done, code, errb.String(), tc.line)
		}
	}
}

// The validate step leaves the bounds to the machines' validators and
// reports them as the flag to fix: one line, exit 2, before any store is
// opened.
func TestCheckRunBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--lease", "0s"}, "baton run: invalid --lease 0s; want at least 50ms (a shorter lease flaps: any pause outlasts it)\n"},
		{[]string{"--lease", "3s", "--renew", "3s"}, "baton run: invalid --renew 3s; want between 1ms and half the lease (1.5s), so that a failed renewal is retried before the lease runs out\n"},
		{[]string{"--clock-margin", "-1s"}, "baton run: invalid --clock-margin -1s; want 0 or more and less than the lease (15s)\n"},
		{[]string{"--every", "1m", "--catch-up-window", "-1s"}, "baton run: invalid --catch-up-window -1s; want 0 (no window) or more\n"},
		{[]string{"--every", "1m", "--catch-up-max", "-1"}, "baton run: invalid --catch-up-max -1; want 0 (no cap) to 100000\n"},
		{[]string{"--every", "1m", "--jitter", "25h"}, "baton run: invalid --jitter 25h0m0s; want 0 or from 1ms to 24h0m0s\n"},
		{[]string{"--every", "1m", "--retries", "-1"}, "baton run: invalid --retries -1; want between 0 and 1000\n"},
		{[]string{"--every", "1m", "--retries", "1", "--retry-backoff", "0s"}, "baton run: invalid --retry-backoff 0s; want positive with retries (e.g. 30s)\n"},
		{[]string{"--every", "1m", "--keep-rows", "-1"}, "baton run: invalid --keep-rows -1; want 0 (keep every row) or more\n"},
		{[]string{"--every", "1m", "--clock-tolerance", "5ms"}, "baton run: invalid --clock-tolerance 5ms; want 0 (off) or at least 10ms\n"},
		{[]string{"--clock-tolerance", "-1s"}, "baton run: invalid --clock-tolerance -1s; want 0 (off) or at least 10ms\n"},
	} {
		e, _, errb, ms := shared()
		args := append([]string{"run", "--store", "mem:"}, append(tc.args, "j", "--", "true")...)
		if code := e.run(t.Context(), args); code != exitUsage || errb.String() != tc.line {
			t.Errorf("baton %q: exit %d, stderr %q; want exit 2 and %q", args, code, errb.String(), tc.line)
		}
		untouched(t, ms, "j")
	}
}
