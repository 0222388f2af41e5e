package bound

import (
	"strconv"
	"time"
)

// Seconds is d in seconds as every JSON output of baton writes a
// duration: the float64 nearest to d's exact decimal value, so that JSON
// (which prints the shortest decimal that reads back as the same float64)
// shows what was measured, 1.777 for 1777ms and never the
// 1.7770000000000001 of d.Seconds(), which adds the whole and fractional
// seconds in floating point. Exact up to 2^53 ns (about 104 days); a
// longer duration is the nearest float64 to its exact value.
func Seconds(d time.Duration) float64 {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = -u // also right for math.MinInt64
	}
	frac := strconv.FormatUint(1e9+u%1e9, 10)[1:] // nine digits
	s := strconv.FormatUint(u/1e9, 10) + "." + frac
	f, _ := strconv.ParseFloat(s, 64) // a decimal of at most 20 digits: never out of range
	if neg {
		return -f
	}
	return f
}
