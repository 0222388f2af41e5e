package baton

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// maxBatch is the most reads or swaps sent to the store in one batched
// call (Store.GetMany, Store.SwapMany); larger sets go as several
// calls, at most maxInflightReads and maxInflightWrites at a time. A store
// that takes long over a batch of writes gets smaller ones (down to
// minBatch), so that no call holds the store for long: on a store with one
// writer (SQLite) the session's renewal waits behind the batches in flight.
const (
	maxBatch          = 1000
	minBatch          = 50
	maxInflightReads  = 4
	maxInflightWrites = 2
)

// driver is the thin runtime of an election.Group: it feeds the machine its
// Clock's time, the Store's replies, timer ticks and change notifications,
// and executes the machine's actions. Store requests go out concurrently,
// the reads of one step as batched reads, and the swaps of every step
// queued for batched swaps (writeQueued),
// so a group holding many names makes a few
// calls per step, not one per name. One goroutine runs while the machine
// has anything in flight or to do.
type driver struct {
	st  store.Store
	cfg config
	g   *election.Group // touched only by the loop goroutine

	// announce executes the machine's announcements (Elected, Extended,
	// Lost, Released, Failed) on the loop goroutine.
	announce func(now time.Time, ev election.Event, acts []election.Action)
	// watch follows change notifications for the loop: the store's
	// change feed, for an Elector filtered to its name.
	watch func(ctx context.Context) <-chan []store.Change
	// feed says that watch reports every record, session records
	// included: the machine is told when the feed opens and closes
	// (election.Feed), and its observers then read another process's
	// session record only when it changed, not every poll.
	feed bool
	// ordered says that the feed says how far it has reported
	// (store.OrderedFeed): each batch is followed by election.Synced.
	ordered bool

	mu      sync.Mutex
	pending []election.Event
	running bool
	stopped chan struct{} // closed when the running loop exits
	wake    chan struct{}
	reads   chan struct{} // batched reads in flight
	batch   atomic.Int64  // the size of the next batched writes

	wmu      sync.Mutex
	queued   []store.Swap            // swaps for batched writes not yet sent, oldest first
	queuedTo chan<- []election.Event // where their replies go
	writers  int                     // goroutines sending queued (writeQueued), at most maxInflightWrites
}

func newDriver(st store.Store, cfg config, g *election.Group) *driver {
	d := &driver{st: st, cfg: cfg, g: g, wake: make(chan struct{}, 1),
		reads: make(chan struct{}, maxInflightReads)}
	d.batch.Store(maxBatch)
	return d
}

// post queues an event for the loop and starts the loop if needed.
func (d *driver) post(ev election.Event) {
	d.mu.Lock()
	d.postLocked(ev)
	d.mu.Unlock()
}

func (d *driver) postLocked(ev election.Event) {
	d.pending = append(d.pending, ev)
	if !d.running {
		d.running = true
		d.stopped = make(chan struct{})
		go d.loop(d.stopped)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// done returns a channel closed when the loop is not running (nil if it
// never ran).
func (d *driver) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		c := make(chan struct{})
		close(c)
		return c
	}
	return d.stopped
}

// loop drives the machine until it is idle with nothing queued.
func (d *driver) loop(stopped chan struct{}) {
	defer close(stopped)
	replies := make(chan []election.Event, 2*(maxInflightReads+maxInflightWrites))
	wctx, cancelWatch := context.WithCancel(context.Background())
	defer cancelWatch()
	var changes <-chan []store.Change
	var rewatch <-chan time.Time
	if d.watch != nil {
		changes = d.watch(wctx)
	}
	if d.feed && changes != nil {
		d.step([]election.Event{election.Feed{Live: true}}, replies)
	}
	var timer Timer
	var fire <-chan time.Time
	var at time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	idle := false
	for {
		d.mu.Lock()
		evs := d.pending
		d.pending = nil
		if len(evs) == 0 && idle {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if len(evs) > 0 {
			idle = d.step(evs, replies)
			continue
		}
		if next := d.g.Next(); !next.Equal(at) {
			if timer != nil {
				timer.Stop()
				timer, fire = nil, nil
			}
			at = next
			if !next.IsZero() {
				timer = d.cfg.clock.NewTimer(max(next.Sub(d.cfg.clock.Now()), 0))
				fire = timer.C()
			}
		}
		select {
		case <-d.wake:
		case r := <-replies:
			idle = d.step(r, replies)
		case <-fire:
			timer, fire, at = nil, nil, time.Time{}
			idle = d.step([]election.Event{election.Tick{}}, replies)
		case batch, ok := <-changes:
			if !ok {
				// The feed broke: polling goes on, and the feed is
				// tried again after a while.
				changes = nil
				rt := d.cfg.clock.NewTimer(d.cfg.lease)
				rewatch = rt.C()
				if d.feed {
					idle = d.step([]election.Event{election.Feed{}}, replies)
				}
				continue
			}
			evs := make([]election.Event, len(batch), len(batch)+1)
			var through int64
			for i, c := range batch {
				evs[i] = election.Changed{Name: c.Name, Version: c.Version}
				through = max(through, c.Through)
			}
			if d.ordered && through > 0 {
				// Stepped after every change of the batch (step keeps
				// the order, ticks aside): the machine may rely on
				// having heard of every write up to through.
				evs = append(evs, election.Synced{Version: through})
			}
			idle = d.step(evs, replies)
		case <-rewatch:
			rewatch = nil
			changes = d.watch(wctx)
			if d.feed && changes != nil {
				idle = d.step([]election.Event{election.Feed{Live: true}}, replies)
			}
		}
	}
}

// step feeds events to the machine, executes its announcements at once
// and sends its store requests, batched. It reports whether the machine
// ended idle.
//
// A large batch (the replies to a batched call, or a change feed's
// report of many writes) is stepped election.DefaultTakeStep events at a time,
// each part's requests sent before the next is stepped, and a timer that
// has come due meanwhile (the session's renewal, most often) is stepped
// between two parts: no batch holds up a renewal for longer than one part
// takes.
func (d *driver) step(evs []election.Event, replies chan<- []election.Event) (idle bool) {
	for {
		n := min(len(evs), election.DefaultTakeStep)
		idle = d.stepPart(evs[:n], replies)
		evs = evs[n:]
		if len(evs) == 0 {
			return idle
		}
		if next := d.g.Next(); !next.IsZero() && !next.After(d.cfg.clock.Now()) {
			d.stepPart([]election.Event{election.Tick{}}, replies)
		}
	}
}

// stepPart is step for at most a part of events.
func (d *driver) stepPart(evs []election.Event, replies chan<- []election.Event) (idle bool) {
	var gets []string
	var swaps []store.Swap
	for _, ev := range evs {
		now := d.cfg.clock.Now()
		acts := d.g.Step(now, ev)
		idle = false
		for _, a := range acts {
			switch a := a.(type) {
			case election.Get:
				gets = append(gets, a.Name)
			case election.Swap:
				swaps = append(swaps, a.Swap)
			case election.List:
				d.sendList(a, replies)
			case election.Idle:
				idle = true
			}
		}
		d.announce(now, ev, acts)
	}
	d.sendGets(gets, replies)
	d.sendSwaps(swaps, replies)
	return idle
}

// callTimeout bounds one store call, so a hung call never holds a request
// for longer than a renew interval.
func (d *driver) callTimeout() time.Duration { return d.cfg.renew }

// batchTimeout bounds one batched call: a lease, since a batch that times
// out is sent again whole, and a slow store should get smaller batches
// (adapt), not the same batch again and again.
func (d *driver) batchTimeout() time.Duration { return d.cfg.lease }

// adapt sizes the next batches of writes after one took took: halved when
// it held the store for more than a sixteenth of a renew interval (a
// renewal may be queued behind it), doubled back when it was quick.
func (d *driver) adapt(took time.Duration) {
	n := d.batch.Load()
	switch {
	case took > d.cfg.renew/16 && n > minBatch:
		d.batch.CompareAndSwap(n, max(n/2, minBatch))
	case took < d.cfg.renew/64 && n < maxBatch:
		d.batch.CompareAndSwap(n, min(n*2, maxBatch))
	}
}

func (d *driver) sendGets(names []string, replies chan<- []election.Event) {
	if len(names) == 1 {
		for _, name := range names {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), d.callTimeout())
				defer cancel()
				rec, err := d.st.Get(ctx, name)
				replies <- []election.Event{election.GetReply{Name: name, Record: rec, Err: err}}
			}()
		}
		return
	}
	for chunk := range chunks(names, maxBatch) {
		go func() {
			d.reads <- struct{}{}
			defer func() { <-d.reads }()
			ctx, cancel := context.WithTimeout(context.Background(), d.batchTimeout())
			defer cancel()
			res, err := d.st.GetMany(ctx, chunk)
			evs := make([]election.Event, len(chunk))
			for i, name := range chunk {
				r := election.GetReply{Name: name, Err: err}
				if err == nil {
					r.Record, r.Err = res[i].Record, res[i].Err
				}
				evs[i] = r
			}
			replies <- evs
		}()
	}
}

// sendList reads a page of the records held through a session
// (store.Succeeder.HeldThrough) for the machine's List. Only a Group with
// succession asks, and only on a store that keeps successions (NewGroup
// checks): any other store answers with an error.
func (d *driver) sendList(l election.List, replies chan<- []election.Event) {
	go func() {
		r := election.ListReply{Session: l.Session}
		if h, ok := store.SucceederOf(d.st); ok {
			ctx, cancel := context.WithTimeout(context.Background(), d.batchTimeout())
			defer cancel()
			r.Records, r.Err = h.HeldThrough(ctx, l.Session, l.After, election.ListPage)
		} else {
			r.Err = fmt.Errorf("%w: the store keeps no successions", store.ErrInvalid)
		}
		replies <- []election.Event{r}
	}()
}

func (d *driver) sendSwaps(swaps []store.Swap, replies chan<- []election.Event) {
	if len(swaps) == 1 {
		for _, sw := range swaps {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), d.callTimeout())
				defer cancel()
				rec, err := d.st.Swap(ctx, sw)
				d.logSwapErr(err)
				replies <- []election.Event{election.SwapReply{Name: sw.Record.Name, Record: rec, Err: err}}
			}()
		}
		return
	}
	if len(swaps) == 0 {
		return
	}
	d.wmu.Lock()
	d.queued = append(d.queued, swaps...)
	d.queuedTo = replies
	size := int(d.batch.Load())
	start := min(maxInflightWrites-d.writers, (len(d.queued)+size-1)/size) // writers for the batches queued
	d.writers += start
	d.wmu.Unlock()
	for range start {
		go d.writeQueued()
	}
}

// writeQueued sends the queued swaps as batched writes, at most
// d.batch.Load() a call, until none is left. The batch is cut when it is
// sent, not when the machine asked for its swaps: a bulk takeover asks for
// 100,000 in steps of election.DefaultTakeStep, and a batch size that adapt
// halved while a slow batch was out is doubled back for the swaps still
// queued, not only for those of later steps.
func (d *driver) writeQueued() {
	for {
		d.wmu.Lock()
		n := min(len(d.queued), int(d.batch.Load()))
		if n == 0 {
			d.writers--
			d.queued = nil
			d.wmu.Unlock()
			return
		}
		// The replies go to the loop that queued them: the loop ends
		// only when the machine is idle, so with nothing queued.
		chunk, replies := d.queued[:n:n], d.queuedTo
		d.queued = d.queued[n:]
		d.wmu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), d.batchTimeout())
		start := d.cfg.clock.Now()
		res, err := d.st.SwapMany(ctx, chunk)
		cancel()
		d.adapt(d.cfg.clock.Now().Sub(start))
		d.logSwapErr(err)
		evs := make([]election.Event, len(chunk))
		for i, sw := range chunk {
			r := election.SwapReply{Name: sw.Record.Name, Err: err}
			if err == nil {
				r.Record, r.Err = res[i].Record, res[i].Err
			}
			evs[i] = r
		}
		replies <- evs
	}
}

func (d *driver) logSwapErr(err error) {
	if err != nil && !errors.Is(err, store.ErrConflict) && !store.Permanent(err) {
		d.cfg.logger.Warn("store write failed", "err", err)
	}
}

// chunks yields s in pieces of at most size.
func chunks[T any](s []T, size int) func(yield func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			n := min(len(s), size)
			if !yield(s[:n:n]) {
				return
			}
			s = s[n:]
		}
	}
}
