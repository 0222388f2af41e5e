package fence

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/batonhq/baton/internal/bound"
)

// Guard fences a resource that lives in this Go process: it keeps the
// highest token it has accepted per name and runs work only for a token at
// least that high.
//
// A Guard is safe for concurrent use. The zero Guard is ready to use;
// NewGuard exists for symmetry with the other constructors. A Guard must not
// be copied after first use. It keeps one small entry per name it has seen
// and never forgets one, which suits the handful of names an election serves.
//
// The highest tokens live in memory only: a restarted process starts again
// from zero and accepts any token. A resource that must stay fenced across
// restarts keeps its highest token durably, in the same transaction as its
// data (see CheckTx).
type Guard struct {
	mu    sync.Mutex
	names map[string]*slot
	key   *Key      // nil: tokens are not authenticated
	log   *GuardLog // nil: no fence log
}

// slot is the state of one name. mu serialises the check with the work of Do;
// highest is written only with mu held and read without it by Highest.
type slot struct {
	mu      sync.Mutex
	highest atomic.Uint64
}

// NewGuard returns an empty Guard: every name starts with highest 0, so the
// first token presented for a name is accepted.
func NewGuard() *Guard {
	return &Guard{}
}

// NewSignedGuard returns an empty Guard that accepts only signed tokens:
// DoSigned and CheckSigned with a signature made by k (see Key), and
// Middleware with the HeaderSig header. Do and Check, which carry no
// signature, are refused with ErrBadSignature. A nil k is an error
// wrapping a *baton.OptionError naming key.
func NewSignedGuard(k *Key) (*Guard, error) {
	if k == nil {
		return nil, fmt.Errorf("fence: NewSignedGuard: %w", bound.Errorf("key", "nil", "a *Key (NewKey, ParseKey or ReadKeyFile)"))
	}
	return &Guard{key: k}, nil
}

// slot returns the state of name, creating it on first use.
func (g *Guard) slot(name string) *slot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.names[name]
	if s == nil {
		if g.names == nil {
			g.names = make(map[string]*slot)
		}
		s = &slot{}
		g.names[name] = s
	}
	return s
}

// Do runs fn only if token is at least the highest token accepted for name,
// and raises the highest to token if fn returns nil.
//
// The check, fn and the raise happen under a lock held per name, so no other
// Do or Check on the same name runs in between: the check and fn's effect are
// atomic with respect to every other caller of this Guard. Do calls on
// different names run in parallel.
//
// If token is stale, Do returns an error wrapping ErrStaleToken that names
// the name, the token and the highest, and fn is not called. If fn returns an
// error, Do returns it unchanged and the highest is not raised: fn must then
// have applied nothing, as with a rolled-back transaction. If fn panics, the
// lock is released, the highest is not raised, and the panic continues.
// Raising only on success means that a failed attempt by a new leader does
// not yet shut out the old one: the old leader's work is still accepted until
// the new leader's first work is applied, and never after it, exactly as if
// the new leader had not started yet.
//
// fn runs while the lock for name is held; it must not call Do or Check on
// the same Guard and name, or it deadlocks.
func (g *Guard) Do(name string, token uint64, fn func() error) error {
	return g.DoSigned(name, token, "", fn)
}

// DoSigned is Do for a token that carries the signature sig (see Key). A
// Guard made by NewSignedGuard runs fn only if sig is valid, and otherwise
// returns an error wrapping ErrBadSignature and changes nothing, whatever
// the token; a Guard without a key ignores sig.
func (g *Guard) DoSigned(name string, token uint64, sig string, fn func() error) error {
	return g.DoWrite(Write{Name: name, Token: token, Sig: sig}, fn)
}

// DoWrite is DoSigned for w, which also names the period the work does,
// for the fence log (SetLog); without a log the period is ignored.
func (g *Guard) DoWrite(w Write, fn func() error) error {
	name, token := w.Name, w.Token
	if err := validate(name, token); err != nil {
		return err
	}
	if err := verify(g.key, name, token, w.Sig); err != nil {
		return err
	}
	s := g.slot(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.highest.Load(); token < h {
		err := staleError(name, token, h)
		g.record(w, Refused, h)
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	s.highest.Store(token)
	g.record(w, Accepted, token)
	return nil
}

// Check accepts token for name if it is at least the highest accepted so
// far, and raises the highest to token; otherwise it returns an error
// wrapping ErrStaleToken and changes nothing. It is Do with no work: use it
// when the effect cannot go inside Do, knowing that then nothing stops a
// newer token from being accepted between the Check and the effect.
func (g *Guard) Check(name string, token uint64) error {
	return g.Do(name, token, func() error { return nil })
}

// CheckSigned is Check for a signed token (see DoSigned).
func (g *Guard) CheckSigned(name string, token uint64, sig string) error {
	return g.DoSigned(name, token, sig, func() error { return nil })
}

// Highest returns the highest token accepted for name, or 0 if none has
// been. It does not wait for a Do in progress on name; it returns the value
// from before that Do.
func (g *Guard) Highest(name string) uint64 {
	g.mu.Lock()
	s := g.names[name]
	g.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.highest.Load()
}

// staleError is the error for a token below the highest accepted.
func staleError(name string, token, highest uint64) error {
	return &staleErr{name, token, highest}
}

// staleErr is a refusal by a fence of this package: it wraps ErrStaleToken
// and keeps the highest token, for the fence log (LogRefusal).
type staleErr struct {
	name           string
	token, highest uint64
}

func (e *staleErr) Error() string {
	return fmt.Sprintf("%v: name %q, token %d, highest %d", ErrStaleToken, e.name, e.token, e.highest)
}

func (e *staleErr) Unwrap() error { return ErrStaleToken }
