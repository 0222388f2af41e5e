package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
)

var _ store.SessionDeleter = (*Store)(nil)

// DeleteSession implements store.SessionDeleter: one transaction that
// checks the store's id, then deletes the row only if it is the free
// session record of that version.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	const op = "delete session"
	if !store.IsSession(name) {
		return fmt.Errorf("postgres: delete %q: %w: not a session record", name, store.ErrInvalid)
	}
	if err := s.enter(ctx, op); err != nil {
		return err
	}
	if err := s.writable(op); err != nil {
		return err
	}
	var refused, outcome error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, op); refused != nil || err != nil {
			return err
		}
		var holder string
		var version int64
		err = tx.QueryRow(ctx, `SELECT holder, version FROM `+s.q+`.election WHERE name = $1 FOR UPDATE`, name).Scan(&holder, &version)
		switch {
		case err == pgx.ErrNoRows:
			outcome = fmt.Errorf("postgres: delete %q: %w", name, store.ErrNotFound)
			return nil
		case err != nil:
			return err
		case version != expect:
			outcome = fmt.Errorf("postgres: delete %q: %w", name, store.ErrConflict)
			return nil
		case holder != "":
			outcome = fmt.Errorf("postgres: delete %q: %w: the session is held (only dead sessions are deleted)", name, store.ErrInvalid)
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM `+s.q+`.election WHERE name = $1`, name)
		return err
	})
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if refused != nil {
		return refused
	}
	return outcome
}
