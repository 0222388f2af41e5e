package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// DeleteSession implements store.Store: one transaction that
// checks the store's id, then deletes the row only if it is the free
// session record of that version and, when it names a successor, no
// record points at it (storedriver.CheckDeleteSucceeded; two probes of
// the partial indexes of successionDDL).
func (s *Store) DeleteSession(ctx context.Context, name string, expect int64) error {
	const op = "delete session"
	if err := storedriver.CheckSessionName(name); err != nil {
		return fmt.Errorf("postgres: %w", err)
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
		var cur store.Record
		err = tx.QueryRow(ctx, `SELECT holder, version, successor FROM `+s.q+`.election WHERE name = $1 FOR UPDATE`, name).Scan(&cur.Holder, &cur.Version, &cur.Successor)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		if outcome = storedriver.CheckDeleteSession(name, cur, expect); outcome != nil {
			outcome = fmt.Errorf("postgres: %w", outcome)
			return nil
		}
		if cur.Successor != "" {
			// Every write of a record held through it has its row FOR
			// KEY SHARE (succession.go): those before committed, those
			// after wait for this delete.
			ref, err := s.referenced(ctx, tx, name)
			if err != nil {
				return err
			}
			if outcome = storedriver.CheckDeleteSucceeded(name, cur, ref); outcome != nil {
				outcome = fmt.Errorf("postgres: %w", outcome)
				return nil
			}
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
