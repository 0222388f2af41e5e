package baton

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/election"
)

// Term is one leadership of one node: from winning the election record to
// losing or resigning it. Its token is fixed when it is won and is the
// fencing token every piece of its work must carry.
//
// A Term that has ended never becomes valid again; a new Campaign makes a new
// Term with a higher token.
type Term struct {
	d      *driver
	name   string
	node   string
	token  uint64
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu         sync.Mutex
	deadline   time.Time
	renewed    chan struct{} // closed at the next extend or end; made by Renewed
	ended      bool
	released   chan struct{}
	releaseErr error

	// safe reports the work's safe points to the Elector (SafePoint);
	// nil for a Group's term.
	safe func(t *Term, safe bool) error
}

// Token returns the fencing token of this term: greater than that of every
// earlier term of the same name, on any node.
func (t *Term) Token() uint64 { return t.token }

// Name returns the election name.
func (t *Term) Name() string { return t.name }

// Node returns the id of the node holding this term.
func (t *Term) Node() string { return t.node }

// Context returns a context that is cancelled the moment leadership is lost
// or may be lost: the lease deadline passed without a successful renewal,
// another writer changed the record, or the term was resigned.
// context.Cause tells which (ErrLeaseExpired, ErrDeposed, ErrResigned,
// ErrStoreLost).
func (t *Term) Context() context.Context { return t.ctx }

// Done is Context().Done().
func (t *Term) Done() <-chan struct{} { return t.ctx.Done() }

// Err returns nil while the term lasts and the cause once it has ended.
func (t *Term) Err() error {
	if t.ctx.Err() == nil {
		return nil
	}
	return context.Cause(t.ctx)
}

// Valid reports whether the term has not ended and its deadline has not
// passed. It reads the clock at every call, so a process that wakes from a
// pause past its deadline sees false before any timer has fired. Once it
// has returned false it never returns true again: a deadline it sees pass
// ends the term.
//
// Valid is not a license to act: the process can pause right after it
// returns true. Work that must not happen twice carries Token to a resource
// that checks it (see package fence).
func (t *Term) Valid() bool {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return false
	}
	if election.Valid(t.d.cfg.clock.Now(), t.deadline) {
		t.mu.Unlock()
		return true
	}
	// The deadline passed before the elector's timer ended the term. Once
	// Valid has said false it must never say true again, even if a renewal
	// that was on its way when the deadline passed succeeds: end the term
	// here and have the elector release the record.
	t.ended = true
	t.cancel(ErrLeaseExpired) // before the wake-up: a caller woken by Renewed sees Err
	t.notifyLocked()
	t.mu.Unlock()
	// The machine ends the term too, if it has not already: through a
	// session, the Group first lets the session see its deadline, so that
	// terms past it end together without a write each.
	t.d.post(election.Resign{Name: t.name, Token: t.token})
	return false
}

// Deadline returns the local monotonic time until which the term is valid
// unless renewed.
func (t *Term) Deadline() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deadline
}

// Renewed returns a channel that is closed when Deadline next changes (a
// renewal succeeded) or the term ends, whichever comes first; for an ended
// term it is closed already. To follow every change, call Renewed again
// before reading Deadline each time: a change between the two calls then
// closes the new channel. baton run forwards each new deadline this way to
// the process supervising its command, which enforces it on its own.
func (t *Term) Renewed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.renewed == nil {
		t.renewed = make(chan struct{})
		if t.ended {
			close(t.renewed)
		}
	}
	return t.renewed
}

// notifyLocked wakes the callers waiting on Renewed, at a change of the
// deadline or the end of the term (once: an ended term's later Renewed
// channels are closed when made); t.mu is held.
func (t *Term) notifyLocked() {
	if t.renewed != nil {
		close(t.renewed)
		t.renewed = nil
	}
}

// Resign ends the term: its context is cancelled first, so the work stops,
// and then the record is released so that another node can take it at once
// instead of waiting for the lease. It waits until the release is written or
// ctx ends. Resigning a term that has already ended waits for its release
// to finish and returns nil.
func (t *Term) Resign(ctx context.Context) error {
	t.d.post(election.Resign{Name: t.name, Token: t.token})
	select {
	case <-t.released:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.releaseErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SignedToken returns the term's token and its signature under k (see
// fence.Key): what a leader sends to a resource that authenticates tokens
// (fence.NewSignedGuard, fence.SetSignedHeaders, fence.CheckSignedTx,
// pgfence.CheckSigned). baton run hands the signature to its command as
// BATON_TOKEN_SIG.
func (t *Term) SignedToken(k *fence.Key) (token uint64, sig string) {
	return t.token, k.Sign(t.name, t.token)
}

var _ slog.LogValuer = (*Term)(nil)

// LogValue makes a Term print as its name, node and token in slog records.
func (t *Term) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", t.name), slog.String("node", t.node), slog.Uint64("token", t.token))
}

func (t *Term) extend(d time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.deadline = d
		t.notifyLocked()
	}
}

func (t *Term) end(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// The context first, then the wake-up: a caller woken by Renewed at
	// the end of the term reads Err non-nil. (A CancelCauseFunc runs no
	// caller code on this goroutine, so it may run under t.mu.)
	t.cancel(cause)
	if !t.ended {
		t.ended = true
		t.notifyLocked()
	}
}

func (t *Term) markReleased(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.released:
	default:
		t.releaseErr = err
		close(t.released)
	}
}
