package store

import "context"

// SessionDeleter is an optional capability: a store that deletes dead
// session records, so that the ones a process leaves behind at every
// restart or lost session do not pile up. Every backend implements it.
//
// Deleting a dead session record loses nothing: a free session record
// never becomes held again, a name that points at a dead or missing session
// may be taken at once (with its own token + 1: tokens live in the names'
// records, which are kept), and the election log is kept.
type SessionDeleter interface {
	// DeleteSession deletes the session record name if it is free (a dead
	// session) and its version is expect, in one atomic step. A held
	// session record, or a name that is not a session record's, is
	// ErrInvalid; another version is ErrConflict; a missing record is
	// ErrNotFound. Nothing is deleted then.
	DeleteSession(ctx context.Context, name string, expect int64) error
}
