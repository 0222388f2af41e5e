package main

// What a node of 'baton run' does with its terms: the start line and the
// waiting log, the command under its supervisor, the executor of scheduled
// runs, the singleton's restarts and --once.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/supervise"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// incarnation returns a new random incarnation id, so that this process
// can tell its own election record from another process's.
func incarnation() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making an incarnation id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// runner holds what the term callbacks of 'baton run' need.
type runner struct {
	cfg            runConfig
	el             *baton.Elector
	inc            string // this process's incarnation
	stdout, stderr lockedWriter
	logger         *slog.Logger
	leading        atomic.Bool
	// recordStore is the store URL a supervisor opens to record a
	// scheduled run's outcome itself (outcome.go); empty: it does not.
	recordStore string
	// stdin is COMMAND's standard input: baton's own for --once (a lock
	// passes it, as flock does), nil (/dev/null) for a singleton and for
	// scheduled runs, which start with nobody at the terminal.
	stdin io.Reader
	// idle hands back the memory of a settled node (idletrim.go); nil:
	// never (--once).
	idle *idleTrimmer
}

// logStart logs the one line that says what this process is: where its
// store is, who it is, what it runs and with which lease.
func (r *runner) logStart() {
	mode := "singleton"
	switch {
	case r.cfg.once:
		mode = "once"
	case r.cfg.job.Schedule != nil:
		mode = "scheduled"
	}
	attrs := []any{"version", moduleVersion(), "store", describeStore(r.cfg.storeURL), "node", r.el.Node(), "job", r.cfg.job.Name, "mode", mode}
	switch {
	case r.cfg.job.Schedule != nil:
		p := r.cfg.job.Policy
		attrs = append(attrs, "schedule", r.cfg.job.Schedule.String(), "catch_up", string(p.CatchUp), "catch_up_max", p.Max)
		if p.Window > 0 {
			attrs = append(attrs, "catch_up_window", p.Window)
		}
		if p.Overlap == schedule.OverlapSkip {
			attrs = append(attrs, "overlap", string(p.Overlap))
		}
		if p.Jitter > 0 {
			attrs = append(attrs, "jitter", p.Jitter)
		}
		if r.cfg.timeout > 0 {
			attrs = append(attrs, "timeout", r.cfg.timeout)
		}
		if p := r.cfg.job.Policy; p.Retries > 0 {
			attrs = append(attrs, "retries", p.Retries, "retry_backoff", p.RetryBackoff)
		}
	case r.cfg.once:
		if r.cfg.wait >= 0 {
			attrs = append(attrs, "wait", r.cfg.wait)
		}
	default:
		attrs = append(attrs, "restart", string(r.cfg.restart))
	}
	attrs = append(attrs, "lease", r.cfg.lease, "renew", r.cfg.renew, "clock_margin", r.cfg.margin, "grace", r.cfg.grace, "command", r.cfg.argv)
	r.logger.Info("baton run starting", attrs...)
}

// poll is how often a waiting node reads the election record to log its
// holder: the Elector's default poll, at most a fifth of the lease.
func (r *runner) poll() time.Duration { return min(baton.DefaultPoll, r.cfg.lease/5) }

// watch runs observe in a goroutine until the returned stop is called or
// ctx ends. stop waits for the goroutine to return, so that no "waiting for
// leadership" line comes out after the line run ends with.
func (r *runner) watch(ctx context.Context, every time.Duration, foreign func(store.Record)) (stop func()) {
	octx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.observe(octx, every, foreign)
	}()
	return func() {
		cancel()
		<-done
	}
}

// observe logs the election record's holder and token whenever they
// change while this node does not lead, until ctx ends. foreign, when not
// nil, is called with the first record held by another process.
func (r *runner) observe(ctx context.Context, every time.Duration, foreign func(store.Record)) {
	var last store.Record
	seen := false
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		if r.leading.Load() {
			seen = false // log again once leadership is lost
		} else if rec, err := r.el.Leader(ctx); err == nil {
			mine := rec.Holder == r.el.Node() && rec.Incarnation == r.inc
			if !mine && (!seen || rec.Holder != last.Holder || rec.Incarnation != last.Incarnation || rec.Token != last.Token) {
				seen, last = true, rec
				if rec.Holder == "" {
					r.logger.Info("waiting for leadership", "holder", "(none)", "token", rec.Token)
				} else {
					r.logger.Info("waiting for leadership", "holder", escape.String(rec.Holder), "token", rec.Token, "lease", rec.Lease)
					if foreign != nil {
						foreign(rec)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

func (r *runner) env(t *baton.Term) []string {
	env := append(os.Environ(), "BATON_NAME="+r.cfg.job.Name, "BATON_NODE="+r.el.Node())
	if t != nil {
		env = append(env, "BATON_TOKEN="+strconv.FormatUint(t.Token(), 10))
		env = append(env, r.cfg.key.env(r.cfg.job.Name, t.Token())...)
	}
	return env
}

// command runs the command under a supervisor (package supervise) with
// env, its output copied byte for byte (line by line with
// --output-lines), and returns its status, the tail
// of its output and supervise.Run's error. The supervisor holds t's
// deadline on its own: the command is stopped by then even if this
// process is stopped or frozen.
func (r *runner) command(ctx context.Context, t *baton.Term, env []string, rec *supervise.Record) (supervise.Status, string, error) {
	tl := &tail{}
	var out, errw outputWriter = rawWriter{r.stdout}, rawWriter{r.stderr}
	if r.cfg.outputLines {
		out, errw = &lineWriter{out: r.stdout}, &lineWriter{out: r.stderr}
	}
	cfg := supervise.Config{
		Argv: r.cfg.argv, Env: env, Stdin: r.stdin,
		Stdout: multi{out, tl}, Stderr: multi{errw, tl},
		Grace: r.cfg.grace, Logger: r.logger, Record: rec,
	}
	if t != nil {
		cfg.Lease = t
	}
	st, err := supervise.Run(ctx, cfg)
	out.Flush()
	errw.Flush()
	return st, tl.String(), err
}

// multi writes to an outputWriter and a tail.
type multi struct {
	l outputWriter
	t *tail
}

func (m multi) Write(p []byte) (int, error) {
	m.t.Write(p)
	return m.l.Write(p)
}

// periodExec returns the executor of scheduled runs under t.
func (r *runner) periodExec(t *baton.Term) schedule.Executor {
	return func(ctx context.Context, p schedule.Period, token uint64) (int, string, error) {
		// --timeout is the scheduler machine's (schedule.Policy.Timeout):
		// it cancels ctx with the cause schedule.ErrTimeout.
		timedOut := func() bool { return errors.Is(context.Cause(ctx), schedule.ErrTimeout) }
		ctx, cancel := stopBefore(ctx, t, r.cfg.grace)
		defer cancel(nil)
		r.idle.poke()
		defer r.idle.poke()
		st, out, err := r.command(ctx, t, append(r.env(t), "BATON_PERIOD="+p.Key), r.outcomeRecord(p.Key, token))
		switch {
		case errors.Is(err, supervise.ErrStopped) && timedOut():
			// A failure of the period, recorded with its reason.
			r.logger.Warn("run timed out; recorded failed", "period", p.Key, "timeout", r.cfg.timeout)
			err = fmt.Errorf("%w: stopped after --timeout %v (%s)", schedule.ErrTimeout, r.cfg.timeout, st)
		case errors.Is(err, supervise.ErrStopped):
			// Stopped by baton (the term ended or its lease is about to):
			// not a failure of the period, which runs again.
			err = fmt.Errorf("%w: %w", schedule.ErrInterrupted, err)
		}
		return st.ExitCode(), out, err
	}
}

// exitedError ends a singleton's term when its command exited and is not
// to be restarted (--restart never or on-failure).
type exitedError struct{ status supervise.Status }

func (e *exitedError) Error() string { return "command " + e.status.String() }

// supervise runs the command as a singleton while t lasts, restarting it
// with capped exponential backoff when it exits, as --restart says.
func (r *runner) supervise(ctx context.Context, t *baton.Term) error {
	backoff := restartMin
	for {
		cctx, cancel := stopBefore(ctx, t, r.cfg.grace)
		began := time.Now()
		st, _, err := r.command(cctx, t, r.env(t), nil)
		cancel(nil)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		// Stopped by baton or its supervisor (the lease about to expire):
		// not the command's own exit, so --restart does not apply; it runs
		// again if the term lasts.
		byBaton := errors.Is(err, supervise.ErrStopped)
		if err != nil && !byBaton {
			r.logger.Warn("command could not start", "err", err)
			st = supervise.Status{Code: 127}
		}
		failed := err != nil || st.ExitCode() != 0
		if !byBaton && (r.cfg.restart == restartNever || (r.cfg.restart == restartOnFailure && !failed)) {
			return &exitedError{st}
		}
		if time.Since(began) > restartMax {
			backoff = restartMin // it ran for a while: start again quickly
		}
		if errors.Is(err, supervise.ErrNotStarted) {
			r.logger.Info("command not started; trying again if the term lasts", "in", backoff)
		} else {
			r.logger.Info("command exited; restarting", "status", st.String(), "in", backoff)
		}
		tm := time.NewTimer(backoff)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, restartMax)
	}
}

// once is 'baton run --once': campaign within --wait, run the command once
// while leading, release, and return the exit code.
func (r *runner) once(ctx context.Context, e *env) int {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var holder atomic.Pointer[store.Record]
	giveUp := func(rec store.Record) {
		holder.Store(&rec)
		cancel(errNotObtained)
	}
	every := r.poll()
	var stopWatching func()
	switch {
	case r.cfg.wait == 0:
		// Do not wait: give up as soon as another process holds it, also
		// when it won a race with this one.
		every = min(every, 50*time.Millisecond)
		stopWatching = r.watch(cctx, every, giveUp)
	case r.cfg.wait > 0:
		tctx, stop := context.WithTimeoutCause(cctx, r.cfg.wait, errNotObtained)
		defer stop()
		cctx = tctx
		stopWatching = r.watch(cctx, every, nil)
	default:
		stopWatching = r.watch(cctx, every, nil)
	}
	t, err := r.el.Campaign(cctx)
	stopWatching()
	if err != nil {
		if ctx.Err() != nil {
			r.logger.Info("stopped while waiting for leadership; the command did not run")
			return exitFailure
		}
		if !errors.Is(context.Cause(cctx), errNotObtained) {
			return e.fail("run", err)
		}
		rec := holder.Load()
		if rec == nil {
			got, err := r.el.Leader(ctx)
			if err != nil {
				return e.fail("run", fmt.Errorf("leadership of %s not obtained within --wait %v, and the store cannot say who holds it: %w", r.cfg.job.Name, r.cfg.wait, err))
			}
			rec = &got
		}
		who := "nobody holds it now (it was released meanwhile); try again"
		if rec.Holder != "" {
			who = fmt.Sprintf("held by %s (token %d)", escape.String(rec.Holder), rec.Token)
		}
		fmt.Fprintf(r.stderr, "baton run: %s: leadership not obtained within --wait %v: %s\n", r.cfg.job.Name, r.cfg.wait, who)
		return exitNotLeader
	}
	cancel(nil)
	r.leading.Store(true)

	work, stopWork := context.WithCancelCause(t.Context())
	unhook := context.AfterFunc(ctx, func() { stopWork(context.Cause(ctx)) })
	wctx, stopBeforeDeadline := stopBefore(work, t, r.cfg.grace)
	st, _, err := r.command(wctx, t, r.env(t), nil)
	stopBeforeDeadline(nil)
	unhook()
	stopWork(nil)
	lost := t.Err() != nil || errors.Is(context.Cause(wctx), errLeaseEnding) || errors.Is(err, supervise.ErrDeadline)
	rctx, rcancel := context.WithTimeout(context.Background(), r.cfg.lease)
	rerr := t.Resign(rctx)
	rcancel()
	switch {
	case err != nil && !errors.Is(err, supervise.ErrStopped):
		return e.fail("run", err)
	case ctx.Err() != nil && rerr != nil:
		r.logger.Warn("stopped; releasing the lease failed; the next node takes over when it expires", "status", st.String(), "err", rerr)
		return st.ExitCode()
	case ctx.Err() != nil:
		r.logger.Info("stopped; leadership released", "status", st.String())
		return st.ExitCode()
	case lost:
		r.logger.Error("leadership lost while the command ran; it was stopped", "status", st.String(), "cause", context.Cause(wctx))
		fmt.Fprintf(r.stderr, "baton run: %s: leadership lost while the command ran; it was stopped (%s)\n", r.cfg.job.Name, st)
		return exitLost
	}
	if rerr != nil {
		r.logger.Warn("command exited; releasing the lease failed; the next node takes over when it expires", "status", st.String(), "err", rerr)
		return st.ExitCode()
	}
	r.logger.Info("command exited; leadership released", "status", st.String())
	return st.ExitCode()
}

// errNotObtained is the cause when --once gives up waiting for leadership.
var errNotObtained = errors.New("leadership not obtained within --wait")

// errLeaseEnding is the cause when a command is stopped because the lease
// could expire within the grace period without a renewal.
var errLeaseEnding = errors.New("lease about to expire without a renewal")

// stopBefore returns a context that ends with ctx, and at the latest grace
// before t's deadline (re-read after every renewal). With t nil it is ctx.
func stopBefore(ctx context.Context, t *baton.Term, grace time.Duration) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if t == nil {
		return ctx, cancel
	}
	go func() {
		for {
			at := t.Deadline().Add(-grace)
			d := time.Until(at)
			if d <= 0 {
				cancel(errLeaseEnding)
				return
			}
			tm := time.NewTimer(d)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return
			}
		}
	}()
	return ctx, cancel
}
