package bound

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Seconds is the exact decimal of a duration as JSON prints it, where
// d.Seconds() is not.
func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1777 * time.Millisecond, "1.777"},
		{0, "0"},
		{time.Nanosecond, "1e-9"}, // JSON writes below 1e-6 with an exponent
		{-1777 * time.Millisecond, "-1.777"},
		{15 * time.Second, "15"},
		{2*time.Hour + 3*time.Millisecond, "7200.003"},
		{math.MaxInt64, "9223372036.854776"}, // beyond 2^53 ns: the nearest float64
		{math.MinInt64, "-9223372036.854776"},
	} {
		b, err := json.Marshal(Seconds(tc.d))
		if err != nil || string(b) != tc.want {
			t.Errorf("Seconds(%v) in JSON = %s, %v; want %s", tc.d, b, err, tc.want)
		}
	}
	// The old way shows float error for 1777ms: the case this exists for.
	if b, _ := json.Marshal((1777 * time.Millisecond).Seconds()); string(b) == "1.777" {
		t.Logf("d.Seconds() is exact here too: %s", b)
	}
	// Every millisecond count up to a day, and a sample of nanoseconds,
	// print as their exact decimal.
	for ms := int64(0); ms <= 86_400_000; ms += 997 {
		d := time.Duration(ms) * time.Millisecond
		want := strings.TrimSuffix(strings.TrimRight(strconv.FormatInt(ms/1000, 10)+"."+strconv.FormatInt(1000+ms%1000, 10)[1:], "0"), ".")
		if got := strconv.FormatFloat(Seconds(d), 'f', -1, 64); got != want {
			t.Fatalf("Seconds(%v) prints %s; want %s", d, got, want)
		}
	}
}
