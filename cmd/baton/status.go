package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
)

const statusSynopsis = `status [--store URL] [--json] [--observe D] NAME
       status [--store URL] [--json] [--limit N | --all] [--prefix P] [--state S] [--holder H] [--cursor C]

Prints what the store knows of NAME: the election record (holder, fencing
token, lease, the store's time of the last write, a pending transfer
request), its state, the nodes waiting to take over (node id, since when,
last seen, the attributes each says it has: --weight, --candidate-label,
--candidate-version; a row whose attributes do not parse is shown escaped
and judged by nobody), the job's preference policy ('baton prefer') with
the leader's attributes and why the leader is or is not the preferred
candidate, and, when NAME is a job, its schedule and catch-up policy, the
next due period, the periods pending or running and the last finished run.

The state is the same in every view (status, serve, its API, history):
free; held (directly or through a session, with the lease left at most, by
store time); session-ended (its holder's session was released or lost: free
to take, with the next token); probably-dead (held, but no renewal for more
than a lease by store time: a flag for people, never a decision, since a
contender waits lease + 2e on its own clock).

Without NAME, status lists the names a page at a time (like systemctl
list-timers): name, state, holder, token, schedule, next due and last run,
--limit names (default 50) in the store's order, filtered by --prefix,
--state, --holder; the last line says how to read the next page (--cursor),
and --all reads every page. Each page costs a bounded read, whatever the
number of names. With --json: {"jobs": [...], "next": CURSOR}.

The store is opened read-only: nothing is created or written, a read-only
file or database role works, and a missing store is "no baton store at
PATH" (exit 1). Status reads a bounded number of the newest ledger rows
(50), whatever the ledger's size.

With --observe D, status watches the record for D on this process's own clock
and reports when it last saw a renewal and the lease remaining as seen from
here: no store or wall clock is compared. A contender decides the same way.

Exit status 1 with "store unavailable" when the store cannot decide (an
etcd cluster without a quorum): degraded mode, nobody can lead until it is back.`

func runStatus(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("status", statusSynopsis)
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON (times RFC 3339, durations in seconds)")
	observeFor := fs.Duration("observe", 0, "watch the record for this long and report the lease remaining as seen by this process (0: do not watch)")
	var lf listFlags
	lf.register(fs)
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	if len(pos) == 0 {
		if *observeFor != 0 {
			return e.fail("status", usagef("--observe needs a NAME"))
		}
		return runStatusList(ctx, e, *storeURL, *asJSON, lf)
	}
	if lf.set(fs) {
		return e.fail("status", usagef("--limit, --all, --prefix, --state, --holder and --cursor list names; give them without NAME"))
	}
	name, err := oneName(pos, "NAME")
	if err == nil && *observeFor < 0 {
		err = usagef("invalid --observe %v; want 0 or a positive duration", *observeFor)
	}
	if err != nil {
		return e.fail("status", err)
	}
	st, err := e.openReader(ctx, *storeURL)
	if err != nil {
		return e.fail("status", err)
	}
	defer st.Close()

	v, err := inspect.Read(ctx, st, name, e.wallNow(), inspect.Options{})
	if err != nil {
		return e.fail("status", readErr(*storeURL, err))
	}
	var seen observation
	if v.Election != nil && *observeFor > 0 {
		rec, o, err := observe(ctx, st, name, *observeFor)
		if err != nil {
			return e.fail("status", readErr(*storeURL, err))
		}
		seen = o
		v.Election.Holder, v.Election.Incarnation, v.Election.Token = rec.Holder, rec.Incarnation, rec.Token
		v.Election.Transfer, v.Election.Version, v.Election.Updated = rec.Transfer, rec.Version, rec.Updated.UTC()
	}
	if *asJSON {
		out := statusJSON{View: v}
		if seen.watched > 0 && v.Election != nil && v.Election.Holder != "" {
			out.Observed = &observedJSON{WatchedSeconds: bound.Seconds(seen.watched), RenewalSeen: seen.changed,
				SinceChangeSeconds: bound.Seconds(seen.since), RemainingSeconds: bound.Seconds(seen.remaining(v.Election.Lease))}
		}
		return e.writeJSON("status", out, exitOK)
	}
	printStatus(e.stdout, v, seen)
	return exitOK
}

// statusJSON is status --json: the view, plus what --observe saw.
type statusJSON struct {
	inspect.View
	Observed *observedJSON `json:"observed,omitempty"`
}

type observedJSON struct {
	WatchedSeconds     float64 `json:"watched_seconds"`
	RenewalSeen        bool    `json:"renewal_seen"`
	SinceChangeSeconds float64 `json:"since_last_change_seconds"`
	RemainingSeconds   float64 `json:"lease_remaining_at_most_seconds"`
}

// readErr explains a failed read: an unavailable store is degraded mode.
func readErr(url string, err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return unavailable(url, err)
	}
	return err
}

// observation is what status saw of a record on this process's clock.
type observation struct {
	watched time.Duration // how long it watched
	changed bool          // whether it saw the version change
	since   time.Duration // time since it last saw a change (or since it started watching)
}

// observe polls the record for d and returns the last record read and
// what was seen: the time since the version last changed, measured on this
// process's monotonic clock, like a contender does. A name held through a
// session is alive as long as its session: observe watches the session
// record instead.
func observe(ctx context.Context, st store.Store, name string, d time.Duration) (store.Record, observation, error) {
	rec, err := st.Get(ctx, name)
	if err != nil {
		return rec, observation{}, err
	}
	watched := rec.Name
	if rec.Session != "" {
		watched = rec.Session
	}
	first, err := st.Get(ctx, watched)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return rec, observation{}, err
	}
	start := time.Now()
	last := start
	var o observation
	tick := time.NewTicker(min(100*time.Millisecond, d))
	defer tick.Stop()
	for time.Since(start) < d {
		select {
		case <-ctx.Done():
			return rec, o, ctx.Err()
		case <-tick.C:
		}
		cur, err := st.Get(ctx, watched)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return rec, o, err
		}
		if cur.Version != first.Version {
			o.changed, last = true, time.Now()
		}
		first = cur
	}
	if watched != rec.Name {
		if rec, err = st.Get(ctx, name); err != nil {
			return rec, o, err
		}
	} else {
		rec = first
	}
	o.watched, o.since = time.Since(start), time.Since(last)
	return rec, o, nil
}

// remaining is the most lease the holder can have left, as seen from here:
// its last renewal was no later than the last change seen.
func (o observation) remaining(lease time.Duration) time.Duration {
	return max(lease-o.since, 0)
}

func (o observation) describe(lease time.Duration) string {
	left := o.remaining(lease)
	var b strings.Builder
	if o.changed {
		fmt.Fprintf(&b, "renewed %v ago (last change seen in %v of watching)", o.since.Round(time.Millisecond), o.watched.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "no renewal seen in %v of watching", o.watched.Round(time.Millisecond))
	}
	if left > 0 {
		fmt.Fprintf(&b, "; lease remaining at most %v as seen by this process", left.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "; the lease has run out as seen by this process: a contender takes over after its clock margin")
	}
	return b.String()
}
