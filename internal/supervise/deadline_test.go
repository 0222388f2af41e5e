package supervise

import (
	"errors"
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"
)

func TestAddSat(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MinInt64 + 1, math.MinInt64, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
		{-5, 5, 0},
	} {
		if got := addSat(tt.a, tt.b); got != tt.want {
			t.Errorf("addSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// The moments a leash asks for never wrap: SIGTERM grace before the
// deadline and SIGKILL at it, exactly where the distance fits in a
// Duration, never later beyond, and "now" (zero or less) exactly when that
// moment has come, for every deadline, grace and clock reading.
func TestLeashSaturates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{math.MinInt64, -1, 0, 1, math.MaxInt64 - 1, never})).Draw(t, "at")
		now := rapid.OneOf(rapid.Int64(), rapid.SampledFrom([]int64{math.MinInt64, 0, math.MaxInt64})).Draw(t, "now")
		grace := time.Duration(rapid.OneOf(rapid.Int64Range(1, int64(time.Hour)), rapid.SampledFrom([]int64{1, math.MaxInt64})).Draw(t, "grace"))
		l := leash{grace: grace, at: at}
		term, kill := l.termIn(now), l.killIn(now)
		// Never later than the truth, "now" exactly when it has come, and
		// exact while the distance to the deadline fits in a Duration.
		fits := new(big.Int).Sub(big.NewInt(at), big.NewInt(now)).IsInt64()
		exact := func(what string, got time.Duration, truth *big.Int) {
			g := big.NewInt(int64(got))
			switch {
			case (truth.Sign() > 0) != (got > 0):
				t.Fatalf("%s in %v, true %v: not the same side of now", what, got, truth)
			case truth.Sign() > 0 && g.Cmp(truth) > 0:
				t.Fatalf("%s in %v, later than the true %v", what, got, truth)
			case fits && truth.IsInt64() && int64(got) != truth.Int64():
				t.Fatalf("%s in %v, want exactly %v", what, got, truth)
			}
		}
		wantKill := new(big.Int).Sub(big.NewInt(at), big.NewInt(now))
		exact("SIGKILL", kill, wantKill)
		exact("SIGTERM", term, new(big.Int).Sub(wantKill, big.NewInt(int64(grace))))
		if term > kill {
			t.Fatalf("SIGTERM in %v after SIGKILL in %v", term, kill)
		}
	})
}

func TestSubSat(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{
		{3, 2, 1},
		{0, math.MinInt64, math.MaxInt64},
		{-1, math.MinInt64, math.MaxInt64},
		{math.MinInt64, 1, math.MinInt64},
		{math.MinInt64, math.MaxInt64, math.MinInt64},
		{math.MaxInt64, math.MaxInt64, 0},
	} {
		if got := subSat(tt.a, tt.b); got != tt.want {
			t.Errorf("subSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// An instant is read CLOCK_MONOTONIC first: a pause between its two clock
// reads makes the deadline earlier, never later.
func TestInstantNeverLater(t *testing.T) {
	const offset = int64(7 * time.Hour) // CLOCK_MONOTONIC minus the other clock
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var elapsed time.Duration
	pause := 2 * time.Second
	// Each clock read is followed by a pause of the process.
	mono := func() int64 { v := int64(elapsed) + offset; elapsed += pause; return v }
	now := func() time.Time { v := base.Add(elapsed); elapsed += pause; return v }
	deadline := base.Add(5 * time.Second)
	got := instant(deadline, mono, now)
	truth := int64(5*time.Second) + offset
	if got > truth {
		t.Fatalf("instant %d is %v after the true deadline", got, time.Duration(got-truth))
	}
	if got != truth-int64(pause) {
		t.Fatalf("instant %d, want the true deadline less the pause, %d", got, truth-int64(pause))
	}
	// Saturated both ways.
	elapsed = 0
	if got := instant(base.Add(math.MaxInt64), mono, now); got != math.MaxInt64 {
		t.Errorf("instant of a far deadline: %d, want MaxInt64", got)
	}
	if got := instant(time.Time{}, func() int64 { return math.MinInt64 + 1 }, func() time.Time { return base }); got != math.MinInt64 {
		t.Errorf("instant of a zero deadline: %d, want MinInt64", got)
	}
}

func TestControlLines(t *testing.T) {
	for _, at := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1234567890123} {
		line := formatDeadline(at)
		got, err := parseDeadline(line[:len(line)-1])
		if err != nil || got != at {
			t.Errorf("parseDeadline(%q) = %d, %v; want %d", line, got, err, at)
		}
	}
	for _, bad := range []string{"", "deadline", "deadline ", "deadline x", "deadline 1e9", "deadline 99999999999999999999", "stop", "deadline 1 2"} {
		if _, err := parseDeadline(bad); !errors.Is(err, errGarbled) {
			t.Errorf("parseDeadline(%q): %v, want errGarbled", bad, err)
		}
	}
	if at, err := parseFirst(formatFirst(never)); err != nil || at != never {
		t.Errorf("no deadline round-trips to %d, %v", at, err)
	}
	if at, err := parseFirst(formatFirst(42)); err != nil || at != 42 {
		t.Errorf("deadline 42 round-trips to %d, %v", at, err)
	}
	if _, err := parseFirst("soon"); err == nil {
		t.Error("parseFirst(soon): no error")
	}
}

// holding runs hold in a synctest bubble on its virtual clock and records
// when it asked for what.
type holding struct {
	t      *testing.T
	start  time.Time
	in     chan int64
	out    chan string
	cur    atomic.Int64
	quit   chan struct{}
	once   sync.Once
	done   chan struct{}
	events []string
	at     []time.Duration
}

func startHold(t *testing.T, grace time.Duration, first time.Duration) *holding {
	return startHoldAt(t, grace, h0(first))
}

// h0 is the instant d after the start.
func h0(d time.Duration) int64 { return int64(d) }

func startHoldAt(t *testing.T, grace time.Duration, first int64) *holding {
	h := &holding{t: t, start: time.Now(), in: make(chan int64), out: make(chan string, 2), quit: make(chan struct{}), done: make(chan struct{})}
	h.cur.Store(first)
	go func() {
		defer close(h.done)
		hold(leash{grace: grace, at: first}, func() int64 { return int64(time.Since(h.start)) }, h.in, h.out, &h.cur, h.quit)
	}()
	t.Cleanup(h.stop)
	return h
}

// stop closes quit, once, and waits for hold to return.
func (h *holding) stop() {
	h.once.Do(func() { close(h.quit) })
	<-h.done
}

// renew sends the deadline d after the start.
func (h *holding) renew(d time.Duration) { h.in <- h0(d) }

// until waits until d after the start, collecting what hold asked for.
func (h *holding) until(d time.Duration) {
	tm := time.NewTimer(d - time.Since(h.start))
	defer tm.Stop()
	for {
		select {
		case ev := <-h.out:
			h.events = append(h.events, ev)
			h.at = append(h.at, time.Since(h.start))
		case <-tm.C:
			return
		}
	}
}

func (h *holding) want(events []string, at []time.Duration) {
	h.t.Helper()
	if len(h.events) != len(events) {
		h.t.Fatalf("asked for %v at %v; want %v at %v", h.events, h.at, events, at)
	}
	for i := range events {
		if h.events[i] != events[i] || h.at[i] != at[i] {
			h.t.Fatalf("asked for %v at %v; want %v at %v", h.events, h.at, events, at)
		}
	}
}

func TestHold(t *testing.T) {
	const (
		lease = 2 * time.Second
		grace = 500 * time.Millisecond
	)
	stop := []string{leaseEnding, leaseOver}
	t.Run("no renewal", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, lease)
			h.until(time.Hour)
			h.want(stop, []time.Duration{lease - grace, lease})
			select {
			case <-h.done:
			default:
				t.Fatal("hold goes on after SIGKILL")
			}
		})
	})
	t.Run("renewals hold it off", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, lease)
			// A renewal sent every 600ms, each for a lease from its send.
			var last time.Duration
			for s := 600 * time.Millisecond; s < 10*time.Second; s += 600 * time.Millisecond {
				h.until(s)
				h.renew(s + lease)
				last = s + lease
				synctest.Wait()
				if got := time.Duration(h.cur.Load()); got != last {
					t.Fatalf("current deadline %v, want %v", got, last)
				}
			}
			h.want(nil, nil)
			// Then none: as when baton is stopped.
			h.until(time.Hour)
			h.want(stop, []time.Duration{last - grace, last})
		})
	})
	t.Run("renewal after SIGTERM is not followed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, lease)
			h.until(lease - grace + time.Millisecond)
			h.renew(10 * lease) // baton woke up, too late: the stop has begun
			h.until(time.Hour)
			h.want(stop, []time.Duration{lease - grace, lease})
		})
	})
	t.Run("an earlier deadline is followed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, lease)
			h.until(100 * time.Millisecond)
			h.renew(time.Second)
			h.until(time.Hour)
			h.want(stop, []time.Duration{time.Second - grace, time.Second})
		})
	})
	t.Run("past", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, -time.Second)
			h.until(time.Millisecond)
			h.want(stop, []time.Duration{0, 0})
		})
	})
	t.Run("within grace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, grace/2)
			h.until(time.Hour)
			h.want(stop, []time.Duration{0, grace / 2})
		})
	})
	t.Run("none", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHoldAt(t, grace, never)
			h.until(100000 * time.Hour)
			h.want(nil, nil)
			// A first deadline given later is held.
			h.renew(100000*time.Hour + lease)
			h.until(200000 * time.Hour)
			h.want(stop, []time.Duration{100000*time.Hour + lease - grace, 100000*time.Hour + lease})
		})
	})
	t.Run("quit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startHold(t, grace, lease)
			h.until(time.Second)
			h.stop()
			h.until(time.Hour)
			h.want(nil, nil)
		})
	})
}
