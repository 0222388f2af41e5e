package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// suspendUpgrade turns a version 3 store into a version 4 one: the job's
// suspension (store.Job.Suspension), zero for every job.
var suspendUpgrade = []string{
	`ALTER TABLE baton_jobs ADD COLUMN suspended_ns INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE baton_jobs ADD COLUMN suspended_by TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE baton_jobs ADD COLUMN suspend_reason TEXT NOT NULL DEFAULT ''`,
	`UPDATE baton_meta SET value = 4 WHERE key = 'schema_version'`,
}

// jobCols are the baton_jobs columns scanJob reads; a store older than
// version 4 (read-only) has no suspension columns and reads as none.
func (s *Store) jobCols() string {
	switch {
	case s.schema < 4:
		return `schedule, created_ns, 0, '', '', '', 0`
	case s.schema < 8:
		return `schedule, created_ns, suspended_ns, suspended_by, suspend_reason, '', 0`
	}
	return `schedule, created_ns, suspended_ns, suspended_by, suspend_reason, prefer, prefer_hysteresis_ns`
}

// scanJob scans a row of jobCols into j (its Name is the caller's).
func (s *Store) scanJob(row *sql.Row, j *store.Job) error {
	var at, hyst int64
	if err := row.Scan(&j.Schedule, nsScanner{&j.Created}, &at, &j.Suspension.By, &j.Suspension.Reason, &j.Prefer, &hyst); err != nil {
		return err
	}
	j.PreferHysteresis = time.Duration(hyst)
	j.Suspension.At = time.Time{}
	if at != 0 {
		j.Suspension.At = time.Unix(0, at).UTC()
	}
	return nil
}

// SuspendJob implements store.Store: the job's row and the log's
// event in one write transaction; the election record is not written.
func (s *Store) SuspendJob(ctx context.Context, sj store.JobSuspend) (store.Job, error) {
	var out store.Job
	err := s.write(ctx, "suspend job", func(tx *sql.Tx) error {
		cur, found, err := s.jobTx(ctx, tx, sj.Name)
		if err != nil {
			return err
		}
		if err := storedriver.CheckSuspend(sj, cur, found); err != nil {
			return err
		}
		at := s.now()
		out = storedriver.Suspend(sj, cur, at)
		var ns int64
		if out.Suspension.Active() {
			ns = at.UnixNano()
		}
		if _, err := tx.ExecContext(ctx, `UPDATE baton_jobs SET suspended_ns = ?, suspended_by = ?, suspend_reason = ? WHERE name = ?`,
			ns, out.Suspension.By, out.Suspension.Reason, sj.Name); err != nil {
			return err
		}
		b := s.bind(ctx, tx)
		defer b.close()
		rec, found, err := s.settleName(ctx, b, sj.Name)
		if err != nil || !found {
			return err
		}
		return appendEvent(ctx, tx, rec.Name, func(seq uint64) store.Event { return storedriver.SuspendEvent(seq, rec, sj, at) })
	})
	if err != nil {
		return store.Job{}, err
	}
	return out, nil
}

// PreferJob implements store.Store: the job's row and the log's event in
// one write transaction; the election record is not written.
func (s *Store) PreferJob(ctx context.Context, p store.JobPrefer) (store.Job, error) {
	var out store.Job
	err := s.write(ctx, "prefer job", func(tx *sql.Tx) error {
		cur, found, err := s.jobTx(ctx, tx, p.Name)
		if err != nil {
			return err
		}
		if err := storedriver.CheckPrefer(p, cur, found); err != nil {
			return err
		}
		at := s.now()
		out = storedriver.Prefer(p, cur)
		if _, err := tx.ExecContext(ctx, `UPDATE baton_jobs SET prefer = ?, prefer_hysteresis_ns = ? WHERE name = ?`,
			p.Prefer, int64(p.Hysteresis), p.Name); err != nil {
			return err
		}
		b := s.bind(ctx, tx)
		defer b.close()
		rec, found, err := s.settleName(ctx, b, p.Name)
		if err != nil || !found {
			return err
		}
		return appendEvent(ctx, tx, rec.Name, func(seq uint64) store.Event { return storedriver.PreferEvent(seq, rec, p, cur, at) })
	})
	if err != nil {
		return store.Job{}, err
	}
	return out, nil
}
