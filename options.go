package baton

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"
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

// Option configures an Elector.
type Option func(*config)

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

	renewSet, pollSet, retrySet bool
}

// WithNode sets this node's id, the name operators see and transfer to
// (default: the host name and process id).
func WithNode(id string) Option { return func(c *config) { c.node = id } }

// WithIncarnation sets the process instance id (default: random per
// Elector). Two Electors must never share one: a restarted process is a new
// incarnation and never inherits the old one's lease.
func WithIncarnation(id string) Option { return func(c *config) { c.incarnation = id } }

// WithLease sets the lease duration (default DefaultLease).
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithRenew sets the renew interval, which must be shorter than the lease
// (default a third of the lease).
func WithRenew(d time.Duration) Option {
	return func(c *config) { c.renew, c.renewSet = d, true }
}

// WithClockMargin sets the clock uncertainty e (default DefaultMargin). A
// contender takes over only after the record stayed unchanged for
// lease + 2e on its own clock.
func WithClockMargin(e time.Duration) Option { return func(c *config) { c.margin = e } }

// WithPoll sets how often a contender re-reads the record (default
// DefaultPoll, at most a fifth of the lease). Stores that notify changes
// (store.Watcher) wake contenders sooner.
func WithPoll(d time.Duration) Option { return func(c *config) { c.poll, c.pollSet = d, true } }

// WithRetry sets how soon a failed renewal is retried (default the poll
// interval, at most a tenth of the lease).
func WithRetry(d time.Duration) Option { return func(c *config) { c.retry, c.retrySet = d, true } }

// WithClock sets the clock (default RealClock).
func WithClock(c Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the logger for leadership changes and store errors
// (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

func newConfig(opts []Option) (config, error) {
	c := config{lease: DefaultLease, margin: DefaultMargin, clock: RealClock{}}
	for _, o := range opts {
		o(&c)
	}
	if c.lease <= 0 {
		return c, fmt.Errorf("baton: lease must be positive, got %v", c.lease)
	}
	if !c.renewSet {
		c.renew = c.lease / 3
	}
	if c.renew <= 0 || c.renew >= c.lease {
		return c, fmt.Errorf("baton: renew interval must be positive and shorter than the lease (%v), got %v", c.lease, c.renew)
	}
	if c.margin < 0 {
		return c, fmt.Errorf("baton: clock margin must not be negative, got %v", c.margin)
	}
	if !c.pollSet {
		c.poll = min(DefaultPoll, c.lease/5)
	}
	if c.poll <= 0 {
		return c, fmt.Errorf("baton: poll interval must be positive, got %v", c.poll)
	}
	if !c.retrySet {
		c.retry = min(c.poll, c.lease/10)
	}
	if c.retry <= 0 {
		return c, fmt.Errorf("baton: retry interval must be positive, got %v", c.retry)
	}
	if c.clock == nil {
		return c, fmt.Errorf("baton: clock must not be nil")
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
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
