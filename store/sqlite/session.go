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
// transaction that checks the store's id first. A dead session with a
// successor is kept while a name's stored record points at it (one entry
// of the session index) or another dead session names it as its
// successor (a range of the session records).
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	const op = "delete session"
	if err := storedriver.CheckSessionName(name); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.write(ctx, op, func(tx *sql.Tx) error {
		var cur store.Record
		err := tx.QueryRowContext(ctx, `SELECT holder, version, successor FROM baton_election WHERE name = ?1`, name).Scan(&cur.Holder, &cur.Version, &cur.Successor)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := storedriver.CheckDeleteSession(name, cur, expect); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		if cur.Successor != "" {
			var referenced bool
			if err := tx.QueryRowContext(ctx, referencedQuery, name).Scan(&referenced); err != nil {
				return err
			}
			if err := storedriver.CheckDeleteSucceeded(name, cur, referenced); err != nil {
				return fmt.Errorf("sqlite: %w", err)
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM baton_election WHERE name = ?1`, name)
		return err
	})
}
