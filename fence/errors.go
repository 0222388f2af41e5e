package fence

import (
	"errors"

	"github.com/batonhq/baton/store"
)

// ErrStaleToken is returned when work carries a fencing token lower than the
// highest token the resource has already accepted for the same name. Nothing
// of the rejected work is applied. It is store.ErrStaleToken, the store
// contract's error (a fenced SwapRun or PruneRuns returns it), so errors.Is
// matches either name.
var ErrStaleToken = store.ErrStaleToken

// ErrInvalidToken is returned for a fencing token that can never be accepted:
// zero (no election hands it out), not a decimal number, or too large for
// the resource to store. Nothing was checked, raised or applied.
var ErrInvalidToken = errors.New("invalid fencing token")

// ErrAmbiguousFence is returned for an HTTP request whose fence headers
// can be read more than one way, so that what one server checks need not
// be what the next one sees: a fence header given twice (repeated lines,
// in any case, or values joined by a comma), named in the Connection
// header (a proxy drops it after checking it) or the Trailer header (a
// second value may follow the body), or spelt with an
// underscore (Baton_Token, which some servers map to the same variable as
// Baton-Token). Nothing was checked, raised or forwarded.
var ErrAmbiguousFence = errors.New("ambiguous fence headers")

// ErrNoFence is returned when work carries no fence at all: an empty name, or
// a missing header or environment variable. Nothing was checked, raised or
// applied.
var ErrNoFence = errors.New("no fencing name or token supplied")
