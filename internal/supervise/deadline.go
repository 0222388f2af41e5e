package supervise

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/monoclock"
)

// Lease is the deadline the supervisor enforces on its own: the command's
// process group gets SIGTERM Grace before it and SIGKILL at it, unless a
// newer deadline came first. *baton.Term is one.
type Lease interface {
	// Deadline returns the monotonic time until which the lease holds
	// unless renewed. It must carry a monotonic clock reading (time.Now
	// plus a duration does).
	Deadline() time.Time
	// Renewed returns a channel closed when Deadline next changes or the
	// lease ends.
	Renewed() <-chan struct{}
	// Done is closed when the lease has ended: Deadline changes no more.
	Done() <-chan struct{}
}

// never is the deadline of a supervisor given none: saturated arithmetic
// keeps it beyond every clock reading.
const never = math.MaxInt64

// Deadlines travel as instants of CLOCK_MONOTONIC, in nanoseconds, which
// baton and its supervisor share (one host, one time namespace), and which
// Go's monotonic readings and timers use on Linux (on Windows, the
// performance counter: see package monoclock). An instant, not a
// duration left: a duration computed by baton, then written after baton
// was stopped for a while, would be read by the supervisor as that much
// later a deadline; an instant means the same whenever it is written or
// read. On Linux, like the lease itself, CLOCK_MONOTONIC does not advance
// while the host is suspended; where the shared clock does (macOS), an
// instant in flight only comes earlier. A suspended host is a host frozen
// whole either way.

// monoNow reads CLOCK_MONOTONIC, in nanoseconds (package monoclock: the
// performance counter on Windows). Should it fail, it returns never: an
// instant always past, which stops the command rather than let it outlive
// a lease.
func monoNow() int64 { return monoclock.Now() }

// instant returns the CLOCK_MONOTONIC reading (as mono reads it) at which
// deadline comes, deadline being measured on the clock now reads. mono is
// read first: a pause between the two reads makes the instant earlier than
// the true one, never later.
func instant(deadline time.Time, mono func() int64, now func() time.Time) int64 {
	m := mono()
	return addSat(m, int64(deadline.Sub(now()))) // Sub saturates
}

// addSat returns a+b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// subSat returns a-b, saturated to the int64 range.
func subSat(a, b int64) int64 {
	s := a - b
	switch {
	case b < 0 && s < a:
		return math.MaxInt64
	case b > 0 && s > a:
		return math.MinInt64
	}
	return s
}

// leash is the supervisor's copy of the lease deadline, as a CLOCK_MONOTONIC
// instant, and what it asks for at a given instant.
type leash struct {
	grace time.Duration
	at    int64 // the deadline; never: none
}

// termIn returns how long after now the group gets SIGTERM: grace before
// the deadline. Zero or less: now.
func (l leash) termIn(now int64) time.Duration {
	if k := subSat(l.at, now); k != math.MaxInt64 {
		return time.Duration(subSat(k, int64(l.grace)))
	}
	// at - now is MaxInt64 or more, so at >= 0 and at - grace is exact.
	return time.Duration(subSat(subSat(l.at, int64(l.grace)), now))
}

// killIn returns how long after now the group gets SIGKILL: at the
// deadline. Zero or less: now.
func (l leash) killIn(now int64) time.Duration {
	return time.Duration(subSat(l.at, now))
}

// What hold asks of the supervisor, also the reasons it reports for the
// signals it then sends.
const (
	leaseEnding = "lease-ending" // SIGTERM: the deadline is within grace
	leaseOver   = "lease-over"   // SIGKILL: the deadline has come
)

// hold follows the lease deadline, from l.at, then each deadline received
// on in, on the clock now (CLOCK_MONOTONIC nanoseconds in production),
// keeping the latest in cur, which holds l.at when hold is called (the
// caller stores it before starting hold's goroutine, so that a reader
// never sees the zero of a deadline not yet stored). When the deadline minus grace comes without
// a newer deadline, it sends leaseEnding on out; from then on it follows
// no newer deadline (the stop has begun and cannot be undone), and sends
// leaseOver when that deadline comes, then returns. It returns too when
// quit is closed. out needs room for two values.
func hold(l leash, now func() int64, in <-chan int64, out chan<- string, cur *atomic.Int64, quit <-chan struct{}) {
	ending := false
	take := func(at int64) {
		if !ending {
			l.at = at
			cur.Store(at)
		}
	}
	for {
		// A deadline that came with the timer counts.
		for drained := false; !drained; {
			select {
			case at, ok := <-in:
				if !ok {
					in = nil
					drained = true
				} else {
					take(at)
				}
			default:
				drained = true
			}
		}
		wait := l.termIn(now())
		if ending {
			wait = l.killIn(now())
		}
		if wait <= 0 {
			if !ending {
				ending = true
				out <- leaseEnding
				continue
			}
			out <- leaseOver
			return
		}
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case at, ok := <-in:
			tm.Stop()
			if !ok {
				in = nil
			} else {
				take(at)
			}
		case <-quit:
			tm.Stop()
			return
		}
	}
}

// formatDeadline is the control pipe's line for a deadline.
func formatDeadline(at int64) string { return "deadline " + strconv.FormatInt(at, 10) + "\n" }

// errGarbled is a control line that is not a deadline.
var errGarbled = errors.New("garbled control line")

// parseDeadline reads a control pipe line, without its newline.
func parseDeadline(line string) (int64, error) {
	v, ok := strings.CutPrefix(line, "deadline ")
	if !ok {
		return 0, fmt.Errorf("%w %q", errGarbled, line)
	}
	at, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q", errGarbled, line)
	}
	return at, nil
}

// formatFirst and parseFirst are the supervisor's DEADLINE argument: the
// first deadline, or "none".
func formatFirst(at int64) string {
	if at == never {
		return "none"
	}
	return strconv.FormatInt(at, 10)
}

func parseFirst(s string) (int64, error) {
	if s == "none" {
		return never, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
