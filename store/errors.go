package store

import (
	"errors"
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. Backends wrap them with %w and detail; callers test with
// errors.Is.
var (
	// ErrConflict is returned by a compare-and-swap whose expected version is
	// not the current one: somebody else wrote first. Nothing was written.
	ErrConflict = errors.New("conflict: the record changed since it was read")

	// ErrNotFound is returned when the named record, job or run does not
	// exist.
	ErrNotFound = errors.New("not found")

	// ErrUnavailable is returned when the store cannot be reached or cannot
	// decide (no quorum, connection lost, timed out). Whether a write that
	// failed this way was applied is unknown; callers re-read before relying
	// on either outcome.
	ErrUnavailable = errors.New("store unavailable")

	// ErrSchema is returned when a store's schema was written by an unknown
	// version of baton, or the file or database is not a baton store. The
	// store is left untouched.
	ErrSchema = errors.New("unsupported store schema")

	// ErrInvalid is returned for a request that can never succeed, such as an
	// empty name or a token that would go backwards. Nothing was written.
	ErrInvalid = errors.New("invalid request")

	// ErrReplaced is returned when the store a caller opened is gone or is
	// no longer the same store (a deleted or replaced SQLite file, a
	// restored backup with another identity). It never heals: a leader that
	// sees it ends its term at once, and nothing it writes afterwards may
	// count.
	ErrReplaced = errors.New("store replaced: it is no longer the store that was opened")

	// ErrCorrupt is returned when the store's data cannot be read or
	// trusted (a corrupt page, a foreign table, keys that are not baton's).
	// It never heals by retrying: callers end their term and stop, naming
	// the store and the problem.
	ErrCorrupt = errors.New("store corrupt or not baton's")

	// ErrTokenLimit is returned, wrapped together with ErrInvalid, by a
	// write whose fencing token is above MaxToken, or of a record whose
	// stored token is: the name's next term could get no token. Nothing
	// was written. It never heals (a token is never lowered): callers end
	// their term and stop; the name's work continues under another name.
	ErrTokenLimit = errors.New("fencing tokens used up")

	// ErrStaleToken is returned when work carries a fencing token lower
	// than the highest token the resource has already accepted for the
	// same name: by a fenced SwapRun or PruneRuns whose token is not the
	// election record's. Nothing of the rejected work is applied.
	// fence.ErrStaleToken is this error.
	ErrStaleToken = errors.New("stale fencing token: a newer leader has already written")

	// ErrSuspended is returned by a SwapRun that would claim or skip a
	// period (write a row running or skipped) of a job that is suspended
	// (Job.Suspension) at the moment of the write, checked in the same
	// atomic step: an operator suspended the job after the caller last
	// read it. Nothing was written. It heals on resume: callers read the
	// job again and claim nothing while it stays suspended.
	ErrSuspended = errors.New("job suspended")
)

// MaxToken is the largest fencing token a baton store holds, on every
// backend: SQLite and PostgreSQL store tokens as signed 64-bit integers
// (etcd could hold more, but a token must move between backends, through
// a restore, and into a fenced SQL table's BIGINT). A name whose token is
// MaxToken has no next term; a token floor (baton.RaiseTokenFloor) is at
// most MaxToken-1 so that the next leader still gets one.
const MaxToken uint64 = math.MaxInt64

// Permanent reports whether err will not heal by retrying: ErrReplaced,
// ErrCorrupt, ErrSchema and ErrTokenLimit. Transient errors
// (ErrUnavailable, timeouts, busy) are worth retrying; permanent ones end
// a term and a process.
func Permanent(err error) bool {
	if err == nil {
		return false // the common case, without a walk
	}
	return permanent(err)
}

// permanent is errors.Is of err and each of the four permanent errors, in
// one walk of err's tree instead of four (a contender's reads and a
// leader's writes that fail ask it of every error, most often one that is
// not permanent and is walked to its end).
func permanent(err error) bool {
	for {
		switch err {
		case ErrReplaced, ErrCorrupt, ErrSchema, ErrTokenLimit:
			return true // the sentinels are pointers: comparing never panics
		}
		if x, ok := err.(interface{ Is(error) bool }); ok &&
			(x.Is(ErrReplaced) || x.Is(ErrCorrupt) || x.Is(ErrSchema) || x.Is(ErrTokenLimit)) {
			return true
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			if err = x.Unwrap(); err == nil {
				return false
			}
		case interface{ Unwrap() []error }:
			for _, err := range x.Unwrap() {
				if err != nil && permanent(err) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
}

// MaxNameLen is the longest election or job name, in bytes.
const MaxNameLen = 200

// CheckName returns an error wrapping ErrInvalid unless name can be an
// election or job name: not empty, at most MaxNameLen bytes of valid UTF-8,
// printable characters only (no control characters, no newlines), so that
// every output prints it as given. Every backend refuses writes of other
// names.
func CheckName(name string) error {
	if printableASCII(name) && len(name) <= MaxNameLen {
		return nil // most names: every store write checks its record's
	}
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name of %d bytes; at most %d", ErrInvalid, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: name %q is not valid UTF-8", ErrInvalid, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: name %q contains the unprintable character %U; use printable characters only", ErrInvalid, name, r)
		}
	}
	return nil
}

// printableASCII reports whether name is not empty and all printable
// ASCII (U+0020 to U+007E, which unicode.IsPrint accepts).
func printableASCII(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return name != ""
}
