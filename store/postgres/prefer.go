package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// PreferJob implements store.Store: one transaction that locks the job,
// changes its preference and appends the event with the record's values
// as they are; the record is not written (no notification).
func (s *Store) PreferJob(ctx context.Context, sj store.JobPrefer) (store.Job, error) {
	const op = "prefer job"
	if err := s.enter(ctx, op); err != nil {
		return store.Job{}, err
	}
	if err := s.writable(op); err != nil {
		return store.Job{}, err
	}
	var out store.Job
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, op); refused != nil || err != nil {
			return err
		}
		cur := store.Job{Name: sj.Name}
		err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols(s.version)+` FROM `+s.q+`.jobs WHERE name = $1 FOR UPDATE`, sj.Name), &cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if refused = storedriver.CheckPrefer(sj, cur, err == nil); refused != nil {
			return nil
		}
		var at time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
			return err
		}
		at = at.UTC()
		out = storedriver.Prefer(sj, cur)
		if _, err := tx.Exec(ctx, `UPDATE `+s.q+`.jobs SET prefer = $2, prefer_hysteresis_ns = $3 WHERE name = $1`,
			sj.Name, sj.Prefer, int64(sj.Hysteresis)); err != nil {
			return err
		}
		// A name that a succession passed on is settled first, so that
		// its log shows the succession, then the change of policy under
		// the holder it was passed on to (as a swap of it would).
		c := s.newChain(op, tx, true)
		_, raws, err := c.readRows(ctx, tx, s.sql.lockRecord, false, sj.Name)
		if err != nil {
			return err
		}
		if err := s.settle(ctx, tx, c, raws); err != nil {
			return err
		}
		ev := storedriver.PreferEvent(0, store.Record{Name: sj.Name}, sj, cur, at)
		_, err = tx.Exec(ctx, `INSERT INTO `+s.q+`.election_log (name, seq, kind, holder, incarnation, token, transfer, time, detail)
			SELECT e.name, coalesce((SELECT max(seq) FROM `+s.q+`.election_log WHERE name = $1), 0) + 1, $2,
			       e.holder, e.incarnation, e.token, e.transfer, $3, $4
			  FROM `+s.q+`.election e WHERE e.name = $1 FOR UPDATE`, sj.Name, string(ev.Kind), at, ev.Detail)
		return err
	})
	if err != nil {
		return store.Job{}, s.failResolve(ctx, op, err)
	}
	if refused != nil {
		return store.Job{}, refused
	}
	return out, nil
}
