package bound

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSaturates(t *testing.T) {
	const maxD, minD = time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, tc := range []struct{ a, b, want time.Duration }{
		{1, 2, 3},
		{maxD, 1, maxD},
		{maxD, maxD, maxD},
		{minD, -1, minD},
		{minD, minD, minD},
		{maxD, minD, -1},
		{-1, 1, 0},
	} {
		if got := Add(tc.a, tc.b); got != tc.want {
			t.Errorf("Add(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		n    int64
		want time.Duration
	}{
		{3, 2, 6},
		{maxD, 2, maxD},
		{maxD / 2, 3, maxD},
		{minD, 2, minD},
		{minD, -1, maxD},
		{maxD, -2, minD},
		{0, math.MaxInt64, 0},
	} {
		if got := Mul(tc.d, tc.n); got != tc.want {
			t.Errorf("Mul(%d, %d) = %d, want %d", tc.d, tc.n, got, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for s, want := range map[string]string{
		"1m30s":                    "",
		"2562047h47m16.854775807s": "",
		"-5s":                      "",
		"0":                        "",
		"5":                        `"5" needs a unit, e.g. 5s`,
		"2562047h47m16.854775808s": "is out of range: a duration is at most 2562047h47m16.854775807s (about 292 years)",
		"9999999999h":              "is out of range",
		"soon":                     `"soon" is not a duration; want a number with a unit`,
		"5 s":                      "is not a duration",
		"":                         "is not a duration",
	} {
		d, err := ParseDuration(s)
		switch {
		case want == "" && err != nil:
			t.Errorf("ParseDuration(%q): %v", s, err)
		case want == "":
			if std, _ := time.ParseDuration(s); d != std {
				t.Errorf("ParseDuration(%q) = %v, want %v", s, d, std)
			}
		case err == nil || !strings.Contains(err.Error(), want):
			t.Errorf("ParseDuration(%q) = %v, %v; want an error saying %q", s, d, err, want)
		}
	}
}
