package store

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Prune asks Store.PruneRuns to delete old final rows of a job.
type Prune struct {
	// Job is the job's name.
	Job string
	// Before and Keep bound the rows deleted: a row may go if its period
	// key is less than Before ("": no such bound), or, when Keep is
	// positive, if at least Keep newer rows of the job exist (it is not
	// among the Keep newest). A retention of an age and a number of rows
	// is one Prune: Before from the age, Keep the number.
	Before string
	Keep   int
	// States are the states of the rows to delete; rows in other states
	// are kept. Only final states (Done, Skipped, Failed) are allowed.
	States []RunState
	// Limit is the most rows deleted in one call (at least 1), so that a
	// prune is a short write.
	Limit int
	// Fenced makes the delete conditional on Token being the current token
	// of the election record named Job.
	Fenced bool
	// Token is the fencing token of a fenced prune.
	Token uint64
}

// JobUpdate asks Store.UpdateJob to replace a job's schedule.
type JobUpdate struct {
	// Name is the job's name.
	Name string
	// Expect is the schedule the job must have now.
	Expect string
	// Schedule is the new schedule description.
	Schedule string
}

// Candidate is a node that campaigns for a name without holding it (or,
// with a preference policy, holds it and says who it is: docs/prefer.md).
type Candidate struct {
	// Name is the election name.
	Name string
	// Node and Incarnation identify the campaigning process.
	Node        string
	Incarnation string
	// Every is how often the node promised to refresh its row.
	Every time.Duration
	// Since is the store's time of the row's first write by this
	// incarnation; Seen the store's time of its last refresh.
	Since time.Time
	Seen  time.Time
	// Age is how long ago Seen was, on the store's clock, when the row
	// was read (Store.Candidates).
	Age time.Duration
	// Attrs is who the node says it is, for a preference policy
	// (docs/prefer.md): the canonical text of its attributes, such as
	// "version=1.4.2 weight=10 zone=eu-1", written by Heartbeat and read
	// back as it was. A store keeps it as it was given and judges
	// nothing; its readers parse it with the election machine's parser,
	// refuse a row that does not parse and show it escaped. Empty: no
	// attributes (and every row a store of an older schema read).
	Attrs string
	// Gone, in a Heartbeat, deletes the row.
	Gone bool
}

// MaxAttrs is the longest Attrs a store keeps: a Heartbeat with a longer
// one is refused (CheckAttrs). Valid attributes take far less.
const MaxAttrs = 4096

// CheckAttrs returns an error wrapping ErrInvalid when a Heartbeat's
// attributes are longer than MaxAttrs, not UTF-8, or hold a NUL byte
// (which no store's text column keeps): every store refuses the same.
// It judges nothing more: the attributes' readers do.
func CheckAttrs(attrs string) error {
	switch {
	case len(attrs) > MaxAttrs:
		return fmt.Errorf("%w: candidate attributes of %d bytes, more than %d", ErrInvalid, len(attrs), MaxAttrs)
	case !utf8.ValidString(attrs) || strings.IndexByte(attrs, 0) >= 0:
		return fmt.Errorf("%w: candidate attributes that are not UTF-8 text without NUL bytes", ErrInvalid)
	}
	return nil
}

// StaleAfter is how many refresh intervals a candidate row may miss before
// readers treat the node as no longer campaigning.
const StaleAfter = 3

// Stale reports whether the node missed StaleAfter refreshes: it crashed or
// stopped campaigning without withdrawing.
func (c Candidate) Stale() bool { return c.Age > StaleAfter*c.Every }

// Valid reports whether p names a job, a positive limit and final states
// only, as PruneRuns requires (it returns ErrInvalid otherwise).
func (p Prune) Valid() bool {
	if p.Job == "" || p.Limit < 1 || len(p.States) == 0 || p.Keep < 0 {
		return false
	}
	for _, s := range p.States {
		if !s.Final() {
			return false
		}
	}
	return true
}

// NoStore returns the error of opening read-only a store that does not
// exist: "no baton store at WHERE", wrapping ErrNotFound.
func NoStore(where string) error { return noStore{where} }

type noStore struct{ where string }

func (e noStore) Error() string { return "no baton store at " + e.where }
func (e noStore) Unwrap() error { return ErrNotFound }
