package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store, in one write
// transaction that checks the store's id first.
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	const op = "delete session"
	if err := storedriver.CheckSessionName(name); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		var cur store.Record
		err := tx.QueryRowContext(ctx, `SELECT holder, version FROM baton_election WHERE name = ?1`, name).Scan(&cur.Holder, &cur.Version)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := storedriver.CheckDeleteSession(name, cur, expect); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM baton_election WHERE name = ?1`, name)
		return err
	})
}
