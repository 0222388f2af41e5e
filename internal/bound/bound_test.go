package bound

import (
	"math"
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
