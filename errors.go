package baton

import (
	"errors"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/election"
)

// Errors returned by the Elector and Term, and the causes a Term reports
// when it ends. Test with errors.Is. They are bare phrases (see "Errors"
// in the package doc): the errors that wrap them say "baton: ".
var (
	// ErrLeaseExpired is a Term's cause when renewals failed (the store was
	// unreachable or slow) until the lease deadline passed; the leader
	// stepped down by itself.
	ErrLeaseExpired = election.ErrLeaseExpired

	// ErrDeposed is a Term's cause when the election record was changed by
	// another writer: another node took it over, or an operator asked for a
	// transfer or resignation.
	ErrDeposed = election.ErrDeposed

	// ErrResigned is a Term's cause after Resign.
	ErrResigned = election.ErrResigned

	// ErrStoreLost is a Term's cause, and wrapped by Campaign's and Run's
	// error, when the store answered with an error that never heals
	// (store.Permanent): the store this node was elected on was deleted or
	// replaced (store.ErrReplaced), is corrupt (store.ErrCorrupt) or is not
	// baton's (store.ErrSchema). The term ends at once, without waiting for
	// the deadline; nothing is released on a store that cannot be trusted,
	// and the elector does not campaign again by itself. The cause wraps the
	// store's error, which names the store and the problem.
	ErrStoreLost = election.ErrStoreLost

	// ErrCampaigning is returned by Campaign and Run when this Elector is
	// already campaigning or leading: one Elector holds at most one Term.
	ErrCampaigning = errors.New("this elector is already campaigning or leading")

	// ErrClosed is returned by a Campaign that Close interrupted.
	ErrClosed = errors.New("elector closed")

	// ErrStaleToken is returned by an operator request or a fenced write
	// whose token is no longer the current one. It is fence.ErrStaleToken.
	ErrStaleToken = fence.ErrStaleToken

	// ErrTokenAhead is returned by an operator request whose token is
	// above the record's current one: no term has had that token yet, so
	// the request names a wrong number, not an old one.
	ErrTokenAhead = errors.New("fencing token ahead of the current one: no term has had it yet")

	// ErrNotLeader is returned by Transfer and RequestResign when the record
	// has no holder to hand over from.
	ErrNotLeader = errors.New("nobody holds the election")
)
