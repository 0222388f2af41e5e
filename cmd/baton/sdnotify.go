package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton"
)

// notifier speaks systemd's notify protocol (sd_notify(3)) for 'baton
// run' under a unit of Type=notify: one datagram per message to the unix
// socket $NOTIFY_SOCKET names (a name starting with '@' is in Linux's
// abstract namespace; Go's net package maps the '@' to the leading NUL).
// A nil *notifier sends nothing: no service manager listens.
type notifier struct {
	addr *net.UnixAddr
	// watchdog is $WATCHDOG_USEC when it is meant for this process
	// ($WATCHDOG_PID unset or this pid); 0: no watchdog.
	watchdog time.Duration
	logger   *slog.Logger

	mu     sync.Mutex
	last   string // the last STATUS sent
	failed bool   // a send failed: logged once

	stopOnce sync.Once
}

// notifierFromEnv returns the notifier $NOTIFY_SOCKET asks for, or nil
// when it is unset. It unsets $NOTIFY_SOCKET, $WATCHDOG_USEC and
// $WATCHDOG_PID, as sd_notify's unset_environment does, so that COMMAND
// does not inherit them: the service manager listens to baton, and a
// command that told it READY=1 or fed its watchdog would speak for baton.
// A $WATCHDOG_USEC that is not a positive number is logged and ignored.
func notifierFromEnv(logger *slog.Logger) *notifier {
	path := os.Getenv("NOTIFY_SOCKET")
	usec, pid := os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID")
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		os.Unsetenv(v)
	}
	if path == "" {
		return nil
	}
	n := &notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}, logger: logger}
	if usec != "" && (pid == "" || pid == strconv.Itoa(os.Getpid())) {
		u, err := strconv.ParseInt(usec, 10, 64)
		if err != nil || u <= 0 || u > int64(time.Duration(1<<63-1)/time.Microsecond) {
			logger.Warn("ignoring $WATCHDOG_USEC: not a positive number of microseconds", "WATCHDOG_USEC", usec)
		} else {
			n.watchdog = time.Duration(u) * time.Microsecond
		}
	}
	return n
}

// send sends one message of newline-separated assignments. A failure is
// logged once: the service manager may have gone away, and baton goes on.
func (n *notifier) send(msg string) {
	if n == nil {
		return
	}
	err := n.write(msg)
	n.mu.Lock()
	first := err != nil && !n.failed
	n.failed = n.failed || err != nil
	n.mu.Unlock()
	if first {
		n.logger.Warn("cannot notify the service manager ($NOTIFY_SOCKET); going on without", "err", err)
	}
}

func (n *notifier) write(msg string) error {
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}

// ready says start-up is complete: the store answered.
func (n *notifier) ready(status string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	n.last = status
	n.mu.Unlock()
	n.send("READY=1\nSTATUS=" + status)
}

// status sends STATUS=s unless it is the last one sent. s is one line.
func (n *notifier) status(s string) {
	if n == nil {
		return
	}
	s = strings.ReplaceAll(s, "\n", " ")
	n.mu.Lock()
	same := s == n.last
	n.last = s
	n.mu.Unlock()
	if !same {
		n.send("STATUS=" + s)
	}
}

// stopping says baton is shutting down, once: when the shutdown begins
// (a signal) or, at the latest, as executeRun returns.
func (n *notifier) stopping() {
	if n == nil {
		return
	}
	n.stopOnce.Do(func() { n.send("STOPPING=1") })
}

// runWatchdog sends WATCHDOG=1 every half of the watchdog interval while
// alive reports true, until ctx ends; it returns at once without a
// watchdog. A process that is stopped (SIGSTOP), or whose alive stays
// false, sends nothing, and the service manager restarts it when the
// interval passes.
func (n *notifier) runWatchdog(ctx context.Context, alive func() bool) {
	if n == nil || n.watchdog <= 0 {
		return
	}
	t := time.NewTicker(max(n.watchdog/2, time.Millisecond))
	defer t.Stop()
	for {
		if alive() {
			n.send("WATCHDOG=1")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sdObserver follows an Elector (baton.Observer) to tell the service
// manager what baton run is doing (STATUS=) and whether its renew loop is
// alive (the watchdog). Its methods are called from the Elector's loop.
type sdObserver struct {
	n     *notifier
	job   string
	lease time.Duration

	mu       sync.Mutex
	leading  bool
	token    uint64
	beat     time.Time // the term's last extension (or its start)
	degraded bool
}

// alive reports whether the renew loop is alive: always while this node
// does not lead (the loop only reads then, and baton is not wedged if the
// watchdog's own goroutine runs); while it leads, when the term was won or
// extended within twice the lease. A renew loop that stops extending
// loses its term at the deadline (within one lease), which says so too;
// one that stops altogether says nothing more and is restarted.
func (o *sdObserver) alive() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.leading || time.Since(o.beat) < 2*o.lease
}

func (o *sdObserver) update() {
	var s string
	switch {
	case o.leading:
		s = fmt.Sprintf("leader of %s, token %d", o.job, o.token)
	case o.degraded:
		s = fmt.Sprintf("degraded: the store is unavailable; nobody can lead %s until it answers", o.job)
	default:
		s = fmt.Sprintf("following: campaigning for %s", o.job)
	}
	o.n.status(s)
}

// Campaigning implements baton.Observer.
func (o *sdObserver) Campaigning(string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.update()
}

// Idle implements baton.Observer.
func (o *sdObserver) Idle(string) {}

// StoreCall implements baton.Observer: a failed call while not leading is
// degraded mode.
func (o *sdObserver) StoreCall(_ string, _ time.Time, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.degraded = err != nil
	o.update()
}

// Elected implements baton.Observer.
func (o *sdObserver) Elected(_ string, token uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leading, o.token, o.beat = true, token, time.Now()
	o.update()
}

// Renewal implements baton.Observer.
func (o *sdObserver) Renewal(string, time.Duration) {}

// Extended implements baton.Observer.
func (o *sdObserver) Extended(string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.beat = time.Now()
}

// Lost implements baton.Observer.
func (o *sdObserver) Lost(string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leading = false
	o.update()
}

// GroupElected implements baton.Observer (baton run holds no Group).
func (o *sdObserver) GroupElected() {}

// GroupLost implements baton.Observer.
func (o *sdObserver) GroupLost(error) {}

// GroupStoreError implements baton.Observer.
func (o *sdObserver) GroupStoreError(error) {}

// SessionRenewal implements baton.Observer.
func (o *sdObserver) SessionRenewal(time.Duration) {}

// observers passes every report to each of its observers in turn.
type observers []baton.Observer

// Campaigning implements baton.Observer.
func (obs observers) Campaigning(name string, lease time.Duration) {
	for _, o := range obs {
		o.Campaigning(name, lease)
	}
}

// Idle implements baton.Observer.
func (obs observers) Idle(name string) {
	for _, o := range obs {
		o.Idle(name)
	}
}

// StoreCall implements baton.Observer.
func (obs observers) StoreCall(name string, at time.Time, err error) {
	for _, o := range obs {
		o.StoreCall(name, at, err)
	}
}

// Elected implements baton.Observer.
func (obs observers) Elected(name string, token uint64) {
	for _, o := range obs {
		o.Elected(name, token)
	}
}

// Renewal implements baton.Observer.
func (obs observers) Renewal(name string, latency time.Duration) {
	for _, o := range obs {
		o.Renewal(name, latency)
	}
}

// Extended implements baton.Observer.
func (obs observers) Extended(name string, left time.Duration) {
	for _, o := range obs {
		o.Extended(name, left)
	}
}

// Lost implements baton.Observer.
func (obs observers) Lost(name string, cause error) {
	for _, o := range obs {
		o.Lost(name, cause)
	}
}

// GroupElected implements baton.Observer.
func (obs observers) GroupElected() {
	for _, o := range obs {
		o.GroupElected()
	}
}

// GroupLost implements baton.Observer.
func (obs observers) GroupLost(cause error) {
	for _, o := range obs {
		o.GroupLost(cause)
	}
}

// GroupStoreError implements baton.Observer.
func (obs observers) GroupStoreError(err error) {
	for _, o := range obs {
		o.GroupStoreError(err)
	}
}

// SessionRenewal implements baton.Observer.
func (obs observers) SessionRenewal(latency time.Duration) {
	for _, o := range obs {
		o.SessionRenewal(latency)
	}
}
