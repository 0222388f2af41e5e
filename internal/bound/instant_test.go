package bound

import (
	"strings"
	"testing"
	"time"
)

func TestParseInstant(t *testing.T) {
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-03-01T00:00:00Z", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-03-01T01:30:00.25+01:00", time.Date(2026, 3, 1, 0, 30, 0, 250e6, time.UTC)},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"-3d", now.Add(-72 * time.Hour)},
		{"+1d", now.Add(24 * time.Hour)},
		{"-12h", now.Add(-12 * time.Hour)},
		{"+1h30m", now.Add(90 * time.Minute)},
		{"1970-01-01", MinInstant},
		{"2262-04-11T23:47:16Z", time.Date(2262, 4, 11, 23, 47, 16, 0, time.UTC)},
	} {
		got, err := ParseInstant(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseInstant(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"2026-13-01", "out of range or not a valid time"},
		{"2026-02-30", "out of range or not a valid time"},
		{"2026-03-01T25:00:00Z", "out of range or not a valid time"},
		{"1969-12-31", "out of range: want an instant from 1970-01-01T00:00:00Z"},
		{"2262-04-12", "out of range"},
		{"9999-12-31T23:59:59Z", "out of range"},
		{"-106752d", "out of range"},              // past 292 years back: before 1970
		{"-99999999999999999d", "out of range"},   // days past a Duration
		{"-9999999999999999999d", "out of range"}, // past an int64
		{"-9999999h", "out of range"},             // past a Duration
		{"-3", "needs a unit"},
		{"yesterday", "is not a time"},
		{"", "is not a time"},
		{"2026-03-01 00:00", "is not a time"},
	} {
		got, err := ParseInstant(tc.in, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "\""+tc.in+"\"") {
			t.Errorf("ParseInstant(%q) = %v, %v; want an error quoting it that says %q", tc.in, got, err, tc.want)
		}
	}
}
