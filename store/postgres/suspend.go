package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// upgrade3 turns a version 3 schema into a version 4 one: the job's
// suspension (store.Job.Suspension), none for every job. It gives the
// store a new id, so that a process of an older baton that opened the
// store before fails its next write with store.ErrReplaced and stops: it
// would claim the periods of a suspended job.
func upgrade3(q string) []string {
	return []string{
		`ALTER TABLE ` + q + `.jobs ADD COLUMN suspended_at timestamptz,
			ADD COLUMN suspended_by text NOT NULL DEFAULT '',
			ADD COLUMN suspend_reason text NOT NULL DEFAULT ''`,
		`UPDATE ` + q + `.meta SET value = gen_random_uuid()::text WHERE key = 'store_id'`,
		`UPDATE ` + q + `.meta SET value = '4' WHERE key = 'schema_version'`,
	}
}

// jobCols are the jobs columns scanJob reads; a schema older than version
// 4 (read-only) has no suspension columns and reads as none.
func jobCols(schemaVersion int) string {
	switch {
	case schemaVersion < 4:
		return `schedule, created, NULL::timestamptz, ''::text, ''::text, ''::text, 0::bigint`
	case schemaVersion < 10:
		return `schedule, created, suspended_at, suspended_by, suspend_reason, ''::text, 0::bigint`
	}
	return `schedule, created, suspended_at, suspended_by, suspend_reason, prefer, prefer_hysteresis_ns`
}

// scanJob scans a row of jobCols into j (its Name is the caller's).
func scanJob(row pgx.Row, j *store.Job) error {
	var at *time.Time
	var hyst int64
	if err := row.Scan(&j.Schedule, &j.Created, &at, &j.Suspension.By, &j.Suspension.Reason, &j.Prefer, &hyst); err != nil {
		return err
	}
	j.PreferHysteresis = time.Duration(hyst)
	j.Created = j.Created.UTC()
	j.Suspension.At = fromNull(at)
	return nil
}

// SuspendJob implements store.Store: one transaction that locks the
// job, changes its suspension and appends the event with the record's
// values as they are; the record is not written (no notification).
func (s *Store) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	const op = "suspend job"
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
		if refused = storedriver.CheckSuspend(sj, cur, err == nil); refused != nil {
			return nil
		}
		var at time.Time
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
			return err
		}
		at = at.UTC()
		out = storedriver.Suspend(sj, cur, at)
		if _, err := tx.Exec(ctx, `UPDATE `+s.q+`.jobs SET suspended_at = $2, suspended_by = $3, suspend_reason = $4 WHERE name = $1`,
			sj.Name, toNull(out.Suspension.At), out.Suspension.By, out.Suspension.Reason); err != nil {
			return err
		}
		// A name that a succession passed on is settled first, so that
		// its log shows the succession, then the suspension by the
		// holder it was passed on to (as a swap of it would).
		c := s.newChain(op, tx, true)
		_, raws, err := c.readRows(ctx, tx, s.sql.lockRecord, false, sj.Name)
		if err != nil {
			return err
		}
		if err := s.settle(ctx, tx, c, raws); err != nil {
			return err
		}
		ev := storedriver.SuspendEvent(0, store.Record{Name: sj.Name}, sj, at)
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
