package baton

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
)

// Defaults. The lease bounds how long a dead leader blocks the work
// (failover takes Lease + 2*Margin + Poll at most); the renew interval
// gives a leader two retries before its lease runs out.
const (
	// DefaultLease is the lease duration.
	DefaultLease = 15 * time.Second
	// DefaultMargin is the clock uncertainty e. Quartz clocks drift by at
	// most about 100 parts per million, 1.5ms over a 15s lease; the rest of
	// the margin covers timer and scheduling slack on a busy host. Pauses
	// longer than that (GC, SIGSTOP, a frozen VM) are not covered by any
	// margin: fencing covers them.
	DefaultMargin = 500 * time.Millisecond
	// DefaultPoll is how often a contender re-reads the record when the
	// store cannot notify it (it is capped at a fifth of the lease).
	DefaultPoll = time.Second
)

// Bounds on the timing options, as the election machine defines them
// (its Config.Validate is the only place they are checked).
const (
	// MinLease is the shortest lease New accepts: a shorter lease flaps
	// on any real machine (a scheduling hiccup outlasts it).
	MinLease = election.MinLease
	// MaxLease is the longest lease New accepts: a dead leader blocks
	// its work for at most a day, and no deadline sum can overflow.
	MaxLease = election.MaxLease
	// MinInterval is the shortest renew, poll and retry interval New
	// accepts: a shorter one would spin on the store.
	MinInterval = election.MinInterval
	// MaxToken is the largest fencing token a term can have
	// (store.MaxToken); a record at MaxToken can never be acquired again,
	// and a contender reports it (store.ErrTokenLimit).
	MaxToken = election.MaxToken
)

// OptionError is the error of an invalid option or argument, the one
// such type of the module: every public constructor (New, NewGroup,
// CheckOptions, schedule.New, schedule.CheckOptions, fence.NewKey,
// fence.NewSignedGuard, fenceproxy.New, batonprom.New) returns it, wrapped
// in its package's name, for bad input; match it with errors.As. It has
// three fields:
//
//	Option string // the option's (or argument's) name, as baton run's flag is named
//	Got    string // the value given
//	Want   string // what is allowed
//
// Option is named as baton run's flag is (lease, renew, clock-margin,
// poll, retry, node, ...), so that a command can say which flag to fix.
// Its Error says "invalid <Option> <Got>; want <Want>". It is an alias of
// the one declaration, which sits below every package (the election and
// scheduler machines return it too).
type OptionError = bound.Error

// optErr returns an *OptionError for option with value got, want formatted
// with a, wrapped in the package's name.
func optErr(option string, got any, want string, a ...any) error {
	return fmt.Errorf("baton: %w", bound.Errorf(option, got, want, a...))
}

// CheckOptions validates opts as New does, without a store: a command can
// refuse bad flags before it opens anything. The error wraps an
// *OptionError.
func CheckOptions(opts ...Option) error {
	_, err := newConfig(opts)
	return err
}

// Option configures an Elector or a Group. Every public package of baton
// has this one shape of option: a WithX function returns it, the
// constructor applies it to its unexported config, and an Option returns
// an error for a value it can judge alone. The bounds that depend on the
// other options are checked by the constructor once all are applied; an
// invalid value is an error wrapping *OptionError, never clamped.
type Option func(*config) error

type config struct {
	node        string
	incarnation string
	lease       time.Duration
	renew       time.Duration
	margin      time.Duration
	poll        time.Duration
	retry       time.Duration
	clock       Clock
	logger      *slog.Logger
	obs         *observing // WithObserver's
	balance     bool
	share       int  // WithShare's weight; 0: none given (1)
	shareSet    bool // WithShare was given
	// asked is what the options say of successions: 1 WithSuccession,
	// -1 WithoutSuccession, 0 nothing (by succession where the store
	// keeps successions and the Group does not balance). succession is
	// what NewGroup settled from it: whether the Group takes a dead
	// process's names by succession.
	asked      int8
	succession bool
	// self is this node's candidacy (WithCandidate); prefer and
	// hysteresis the name's preference (WithPreference, preferSet).
	self       election.Attrs
	prefer     election.Policy
	hysteresis time.Duration
	preferSet  bool

	renewSet, pollSet, retrySet bool
}

// machine returns the election machine's configuration.
func (c config) machine() election.Config {
	return election.Config{
		Node: c.node, Incarnation: c.incarnation,
		Lease: c.lease, Renew: c.renew, Margin: c.margin,
		Poll: c.poll, Retry: c.retry, Balance: c.balance, Share: c.share, Succession: c.succession,
		Prefer: c.prefer, Hysteresis: c.hysteresis, Self: c.self,
	}
}

// WithNode sets this node's id, the name operators see and transfer to
// (default: the host name and process id).
func WithNode(id string) Option { return func(c *config) error { c.node = id; return nil } }

// WithIncarnation sets the process instance id (default: random per
// Elector). Two Electors must never share one: a restarted process is a new
// incarnation and never inherits the old one's lease.
func WithIncarnation(id string) Option {
	return func(c *config) error { c.incarnation = id; return nil }
}

// WithLease sets the lease duration (default DefaultLease, between
// MinLease and MaxLease).
func WithLease(d time.Duration) Option { return func(c *config) error { c.lease = d; return nil } }

// WithRenew sets the renew interval, at least MinInterval and at most half
// the lease (default a third of the lease).
func WithRenew(d time.Duration) Option {
	return func(c *config) error { c.renew, c.renewSet = d, true; return nil }
}

// WithClockMargin sets the clock uncertainty e (default DefaultMargin),
// less than the lease. A contender takes over only after the record
// stayed unchanged for lease + 2e on its own clock.
func WithClockMargin(e time.Duration) Option {
	return func(c *config) error { c.margin = e; return nil }
}

// WithPoll sets how often a contender re-reads the record (default
// DefaultPoll, at most a fifth of the lease; when set, between MinInterval
// and half the lease). The store's change feed (Store.WatchChanges) wakes
// contenders sooner.
func WithPoll(d time.Duration) Option {
	return func(c *config) error { c.poll, c.pollSet = d, true; return nil }
}

// WithRetry sets how soon a failed renewal is retried (default the poll
// interval, at most a tenth of the lease; when set, between MinInterval and
// half the lease).
func WithRetry(d time.Duration) Option {
	return func(c *config) error { c.retry, c.retrySet = d, true; return nil }
}

// WithBalance makes a Group balanced (NewGroup only; New refuses it):
// processes that campaign with it for the same names share them, each
// ending with about N/P of N names when P processes run, and share again
// when one joins or leaves. A balanced Group counts, from the records it
// reads anyway, how many of its names every node holds, and once per renew
// interval asks a node that holds two or more names than it does to hand
// half the difference over: the request Transfer makes, on the version it
// read. The holder frees each name towards it (its term of the name ends
// with ErrDeposed and counts in GroupStats.Lost), and it takes the name at
// once with a new token, so a name never has two holders. Free names are
// taken by whoever comes first, as without balance; the balance follows.
// Processes without WithBalance keep what they hold and never ask, but
// they are asked like the others.
func WithBalance() Option { return func(c *config) error { c.balance = true; return nil } }

// WithShare sets a balanced Group's weight, 1 to MaxWeight (default 1;
// NewGroup with WithBalance only): with weights w_i among the balanced
// Groups that hold the same N names, each ends with about N*w_i/sum(w)
// of them, and they share again when one joins or leaves. A Group asks
// another for a name while the move brings the two closer to holding in
// proportion to their weights, and never takes more than its share
// rounded up, so where the moves end is Sainte-Laguë's apportionment of
// the names by the weights (weights 1, 2 and 3 share 36 names as 6, 12
// and 18). The weight travels in the name of the Group's session record,
// which every record it holds names, so the other Groups learn it where
// they learn its load; the names move by the requests WithBalance
// describes, never held twice. A Group that holds none of the names is
// not seen, so its weight counts once it holds one. Equal weights share
// as WithBalance alone does.
func WithShare(weight int) Option {
	return func(c *config) error {
		if weight < 1 || weight > MaxWeight {
			return optErr("share", weight, "1 to %d, this Group's weight among the balanced Groups that hold the same names", MaxWeight)
		}
		c.share, c.shareSet = weight, true
		return nil
	}
}

// WithSuccession makes a Group take over a dead process's names by
// succession, and refuses to make one that cannot (NewGroup only; New
// refuses it, and so does NewGroup with WithBalance or on a store that
// keeps no successions, store.Succeeder). A Group does so by default
// where it can: without WithBalance, on a store that keeps successions.
//
// By succession, the write that ends the dead session names this Group's
// session as its successor, and every name held through the dead one is
// held through this one from then on, each with its token raised by one,
// without a write per name, so that a takeover of 100,000 names costs one
// write and the reads that follow. The names this Group does not campaign
// for are released a poll later. Every baton store keeps successions
// (SQLite from schema 7, PostgreSQL from schema 7, etcd from schema 5: a
// process upgrades its store when it opens it for writing). See
// docs/succession.md.
func WithSuccession() Option { return func(c *config) error { c.asked = 1; return nil } }

// WithoutSuccession makes a Group take a dead process's names each with a
// write of its own (a new holder, the token raised by one), as a balanced
// Group does, instead of by succession (see WithSuccession). A takeover
// then costs a write a name: 100,000 names on SQLite were held again
// 1.8-2.8 s after the floor, against 0.6-0.8 s by succession
// (BENCHMARKS.md). For a store wrapper whose successions should not be
// used, or to compare.
func WithoutSuccession() Option { return func(c *config) error { c.asked = -1; return nil } }

// WithClock sets the clock (default RealClock).
func WithClock(c Clock) Option { return func(cfg *config) error { cfg.clock = c; return nil } }

// WithLogger sets the logger for leadership changes and store errors
// (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) error { c.logger = l; return nil } }

func newConfig(opts []Option) (config, error) {
	c := config{lease: DefaultLease, margin: DefaultMargin, clock: RealClock{}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return c, err
		}
	}
	if !c.renewSet {
		c.renew = c.lease / 3
	}
	if !c.pollSet {
		c.poll = min(DefaultPoll, c.lease/5)
	}
	if !c.retrySet {
		c.retry = max(min(c.poll, c.lease/10), MinInterval)
	}
	if c.clock == nil {
		return c, optErr("clock", "nil", "a Clock (RealClock{} by default)")
	}
	if c.node == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "node"
		}
		c.node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.incarnation == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return c, fmt.Errorf("baton: making an incarnation id: %w", err)
		}
		c.incarnation = hex.EncodeToString(b[:])
	}
	if err := c.machine().Validate(); err != nil {
		return c, fmt.Errorf("baton: %w", err) // an *OptionError
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
