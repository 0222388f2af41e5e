package schedule_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	tests := []struct {
		d, off time.Duration
		after  string
		want   string
	}{
		{24 * time.Hour, 0, "2026-03-04T10:11:12Z", "2026-03-05T00:00:00Z"},
		{24 * time.Hour, 0, "2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z"}, // strictly after
		{24 * time.Hour, 2 * time.Hour, "2026-03-04T10:11:12Z", "2026-03-05T02:00:00Z"},
		{24 * time.Hour, 2 * time.Hour, "2026-03-04T01:59:59Z", "2026-03-04T02:00:00Z"},
		{10 * time.Second, 0, "2026-03-04T10:11:12.5Z", "2026-03-04T10:11:20Z"},
		{10 * time.Second, 0, "1969-12-31T23:59:55Z", "1970-01-01T00:00:00Z"},
		{10 * time.Second, 0, "1969-12-31T23:59:50Z", "1970-01-01T00:00:00Z"},
		{10 * time.Second, 0, "1969-12-31T23:59:49.5Z", "1969-12-31T23:59:50Z"},
		{time.Hour, 0, "2026-03-04T10:11:12+05:30", "2026-03-04T05:00:00Z"},
	}
	for _, tt := range tests {
		s, err := schedule.Every(tt.d, tt.off)
		if err != nil {
			t.Fatal(err)
		}
		if got := schedule.Key(s.Next(mustTime(t, tt.after))); got != tt.want {
			t.Errorf("%v.Next(%s) = %s, want %s", s, tt.after, got, tt.want)
		}
	}
}

func TestEveryValidates(t *testing.T) {
	for _, tt := range []struct{ d, off time.Duration }{
		{0, 0}, {-time.Second, 0}, {500 * time.Millisecond, 0}, {1500 * time.Millisecond, 0},
		{time.Minute, time.Minute}, {time.Minute, -time.Second}, {time.Minute, 500 * time.Millisecond},
	} {
		if _, err := schedule.Every(tt.d, tt.off); err == nil {
			t.Errorf("Every(%v, %v) accepted", tt.d, tt.off)
		}
	}
}

func TestCronInTimeZone(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	s, err := schedule.Cron("30 2 * * *", paris)
	if err != nil {
		t.Fatal(err)
	}
	// 02:30 in Paris is 01:30 UTC in winter, 00:30 UTC in summer; on
	// 2026-03-29 the clocks skip from 02:00 to 03:00, so there is no 02:30:
	// it runs once, at 03:00 CEST, 01:00 UTC (cron's rule).
	got, _ := schedule.Due(s, mustTime(t, "2026-03-27T12:00:00Z"), mustTime(t, "2026-03-31T12:00:00Z"), 0)
	var keys []string
	for _, g := range got {
		keys = append(keys, schedule.Key(g))
	}
	want := "2026-03-28T01:30:00Z 2026-03-29T01:00:00Z 2026-03-30T00:30:00Z 2026-03-31T00:30:00Z"
	if strings.Join(keys, " ") != want {
		t.Errorf("due %v, want %s", keys, want)
	}
	d, err := schedule.Cron("@daily", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := schedule.Key(d.Next(mustTime(t, "2026-03-27T12:00:00Z"))); got != "2026-03-28T00:00:00Z" {
		t.Errorf("@daily next %s", got)
	}
}

func TestCronRefuses(t *testing.T) {
	for _, expr := range []string{"", "* * *", "61 * * * *", "@every 1h", "TZ=UTC * * * * *", "CRON_TZ=UTC 0 * * * *", "0 0 * * * *"} {
		if _, err := schedule.Cron(expr, time.UTC); err == nil {
			t.Errorf("Cron(%q) accepted", expr)
		}
	}
	if _, err := schedule.Cron("* * * * *", nil); err == nil {
		t.Error("Cron without a location accepted")
	}
}

func TestKeys(t *testing.T) {
	at := mustTime(t, "2026-03-04T10:11:12.75+01:00")
	if got := schedule.Key(at); got != "2026-03-04T09:11:12Z" {
		t.Fatalf("Key = %s", got)
	}
	back, err := schedule.ParseKey("2026-03-04T09:11:12Z")
	if err != nil || !back.Equal(at.Truncate(time.Second)) {
		t.Fatalf("ParseKey: %v %v", back, err)
	}
	for _, bad := range []string{"", "2026-03-04", "2026-03-04T09:11:12+01:00", "2026-03-04T09:11:12.5Z", "2026-3-4T09:11:12Z"} {
		if _, err := schedule.ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestDueLimit(t *testing.T) {
	s, _ := schedule.Every(time.Second, 0)
	from := mustTime(t, "2026-01-01T00:00:00Z")
	got, more := schedule.Due(s, from, from.Add(10*time.Second), 3)
	if len(got) != 3 || !more || schedule.Key(got[0]) != "2026-01-01T00:00:01Z" {
		t.Fatalf("Due: %v more %v", got, more)
	}
	got, more = schedule.Due(s, from, from.Add(10*time.Second), 0)
	if len(got) != 10 || more {
		t.Fatalf("Due without limit: %d more %v", len(got), more)
	}
}

func TestManualKeys(t *testing.T) {
	at := mustTime(t, "2026-03-04T10:11:12.3456789Z")
	k := schedule.ManualKey(at)
	if k != "2026-03-04T10:11:12Z~manual.345678" || !schedule.IsManualKey(k) || schedule.IsManualKey(schedule.Key(at)) {
		t.Fatalf("ManualKey = %q", k)
	}
	back, err := schedule.ParseKey(k)
	if err != nil || !back.Equal(at.Truncate(time.Microsecond)) {
		t.Fatalf("ParseKey(%q) = %v, %v", k, back, err)
	}
	// Manual keys sort among scheduled ones by time, after the scheduled
	// key of their second, and never equal one.
	keys := []string{schedule.Key(at), k, schedule.Key(at.Add(time.Second)), schedule.ManualKey(at.Add(-time.Second))}
	if !(keys[3] < keys[0] && keys[0] < keys[1] && keys[1] < keys[2]) {
		t.Errorf("keys do not sort in time order: %v", keys)
	}
	for _, bad := range []string{k + "0", "2026-03-04T10:11:12Z~manual.", "2026-03-04T10:11:12Z~manual.-12345", "2026-03-04T10:11:12Z~manual.abcdef", "2026-03-04T10:11:12Z~other.123456"} {
		if _, err := schedule.ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	every, _ := schedule.Every(10*time.Second, 3*time.Second)
	cron, _ := schedule.Cron("30 2 * * 1-5", paris)
	for _, tc := range []struct {
		s schedule.Schedule
		p schedule.Policy
	}{
		{every, schedule.Policy{}},
		{cron, schedule.Policy{CatchUp: schedule.CatchUpLatest, Window: time.Hour}},
		{every, schedule.Policy{Max: 100, Overlap: schedule.OverlapSkip, Jitter: 30 * time.Second, Window: 48 * time.Hour}},
		{every, schedule.Policy{Max: 1, Overlap: schedule.OverlapQueue}},
		{nil, schedule.Policy{}},
	} {
		d := schedule.Describe(tc.s, tc.p)
		s, p, err := schedule.ParseSpec(d)
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", d, err)
		}
		if schedule.Describe(s, p) != d {
			t.Errorf("ParseSpec(%q) reads back as %q", d, schedule.Describe(s, p))
		}
	}
	// What an older baton stored: the schedule alone.
	if s, p, err := schedule.ParseSpec("every 24h0m0s"); err != nil || s == nil || p.CatchUp != schedule.CatchUpAll {
		t.Errorf("old description: %v %+v %v", s, p, err)
	}
	for _, bad := range []string{"", "every", "every 10q", "cron 30 2 * * * in UTC", `cron "30 2 * * *" in Mars/Olympus`, "every 10s; catch-up some",
		"every 10s; catch-up all, max 0", "every 10s; catch-up all, max -1", "every 10s; catch-up all, max 99999999999",
		"every 10s; catch-up all, overlap wait", "every 10s; catch-up all, jitter 48h", "every 10s; catch-up all, jitter x",
		"every 10s; catch-up all, colour red", "every 10s; catch-up all,"} {
		if _, _, err := schedule.ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
	// A duration's error says what is wrong with it.
	for spec, want := range map[string]string{
		"every 9999999999h":                           "out of range: a duration is at most",
		"every 10s; catch-up all, jitter 9999999999h": "catch-up jitter: \"9999999999h\" is out of range",
		"every 10s; catch-up all, jitter 5":           "\"5\" needs a unit",
	} {
		if _, _, err := schedule.ParseSpec(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpec(%q) = %v, want an error saying %q", spec, err, want)
		}
	}
}

// A job registered before the catch-up cap existed is stored without
// one. A node never takes its policy from the store, so a node with the
// default cap does not run it uncapped: it is refused as a mismatch until
// it reschedules, which stores the cap.
func TestStoredWithoutCapIsNotRunUncapped(t *testing.T) {
	ctx := context.Background()
	for _, old := range []string{"every 10s; catch-up all", "every 10s"} {
		ms := memstore.New()
		if _, err := ms.EnsureJob(ctx, store.Job{Name: "old", Schedule: old}); err != nil {
			t.Fatal(err)
		}
		s, err := schedule.Every(10*time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, p, err := schedule.ParseSpec(old); err != nil || p.Max != 0 {
			t.Fatalf("ParseSpec(%q) = %+v, %v; want no cap", old, p, err)
		}
		job := schedule.Job{Name: "old", Schedule: s, Policy: schedule.Policy{Max: schedule.DefaultCatchUpMax}}
		if _, err := schedule.Register(ctx, ms, job, false); !errors.Is(err, schedule.ErrScheduleMismatch) {
			t.Fatalf("%q: a node with the default cap registers: %v, want ErrScheduleMismatch", old, err)
		}
		got, err := schedule.Register(ctx, ms, job, true)
		if want := "every 10s; catch-up all, max 100"; err != nil || got.Schedule != want {
			t.Fatalf("%q rescheduled: %q, %v; want %q", old, got.Schedule, err, want)
		}
	}
}

// ParseKey reads what it read with time.Parse and Format alone (a key is
// one its instant formats back to), now that it reads the keys Key writes
// digit by digit: the same instant and error or none, for keys, manual
// keys and strings that are almost keys.
func TestParseKeyMatchesParseAndFormat(t *testing.T) {
	parse := func(key string) (time.Time, bool) {
		sec, frac, manual := strings.Cut(key, "~manual.")
		at, err := time.Parse(schedule.KeyLayout, sec)
		if err != nil || at.Format(schedule.KeyLayout) != sec {
			return time.Time{}, false
		}
		if !manual {
			return at, true
		}
		us, err := strconv.Atoi(frac)
		if err != nil || len(frac) != 6 || frac[0] == '+' || frac[0] == '-' {
			return time.Time{}, false
		}
		return at.Add(time.Duration(us) * time.Microsecond), true
	}
	keys := []string{
		"", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
		"2026-01-01T24:00:00Z", "2026-01-01T00:00:60Z", "2026-01-01T00:00:00Z~manual.250000",
		"2026-01-01T00:00:00Z~manual.25000", "+2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00",
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		at := time.Unix(r.Int64N(400_000_000_000)-62_000_000_000, r.Int64N(1e9))
		keys = append(keys, schedule.Key(at), schedule.ManualKey(at))
		b := []byte(schedule.ManualKey(at))
		b[r.IntN(len(b))] = "0123456789-:TZ+x~."[r.IntN(18)]
		keys = append(keys, string(b), string(b[:20]))
	}
	for _, k := range keys {
		got, err := schedule.ParseKey(k)
		want, ok := parse(k)
		if got != want || (err == nil) != ok {
			t.Fatalf("ParseKey(%q) = %v, %v; Parse and Format give %v, %v", k, got, err, want, ok)
		}
	}
}
