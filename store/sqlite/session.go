package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

var _ store.SessionDeleter = (*Store)(nil)

// DeleteSession implements store.SessionDeleter, in one write
// transaction that checks the store's id first.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	const op = "delete session"
	if !store.IsSession(name) {
		return fmt.Errorf("sqlite: delete %q: %w: not a session record", name, store.ErrInvalid)
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		var holder string
		var version int64
		err := tx.QueryRowContext(ctx, `SELECT holder, version FROM baton_election WHERE name = ?1`, name).Scan(&holder, &version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: delete %q: %w", name, store.ErrNotFound)
		case err != nil:
			return err
		case version != expect:
			return fmt.Errorf("sqlite: delete %q: %w", name, store.ErrConflict)
		case holder != "":
			return fmt.Errorf("sqlite: delete %q: %w: the session is held (only dead sessions are deleted)", name, store.ErrInvalid)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM baton_election WHERE name = ?1`, name)
		return err
	})
}
