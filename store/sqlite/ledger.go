package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("sqlite: %w: empty job name", store.ErrInvalid)
	}
	if err := storedriver.CheckJob(j); err != nil {
		return store.Job{}, fmt.Errorf("sqlite: %w", err)
	}
	var got store.Job
	err := s.write(ctx, "ensure job", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO baton_jobs (name, schedule, created_ns, prefer, prefer_hysteresis_ns) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			j.Name, j.Schedule, s.now().UnixNano(), j.Prefer, int64(j.PreferHysteresis))
		if err != nil {
			return err
		}
		got.Name = j.Name
		return s.scanJob(tx.QueryRowContext(ctx, `SELECT `+s.jobCols()+` FROM baton_jobs WHERE name = ?`, j.Name), &got)
	})
	if err != nil {
		return store.Job{}, err
	}
	return got, nil
}

const runCols = `scheduled_ns, state, token, holder, attempt, manual, started_ns, finished_ns, exit_code, output, version`

// getRun reads one ledger row; a missing row is the zero Run (Version 0)
// and found false.
func getRun(ctx context.Context, q queryRower, job, period string) (r store.Run, found bool, err error) {
	r, err = scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM baton_runs WHERE job = ? AND period = ?`, job, period))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, false, nil
	}
	if err != nil {
		return store.Run{}, false, err
	}
	r.Job, r.Period = job, period
	if err := store.CheckRunState(job, period, r.State); err != nil {
		return store.Run{}, false, err
	}
	return r, true, nil
}

func scanRun(row interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	var state string
	var token int64
	err := row.Scan(nsScanner{&r.Scheduled}, &state, &token, &r.Holder, &r.Attempt, &r.Manual,
		nsScanner{&r.Started}, nsScanner{&r.Finished}, &r.ExitCode, &r.Output, &r.Version)
	r.State, r.Token = store.RunState(state), uint64(token)
	return r, err
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	const op = "get run"
	if err := s.enter(ctx, op); err != nil {
		return store.Run{}, err
	}
	r, found, err := getRun(ctx, s.db, job, period)
	if err != nil {
		return store.Run{}, s.fail(ctx, op, err)
	}
	if !found {
		return store.Run{}, fmt.Errorf("sqlite: run %s/%s: %w", job, period, store.ErrNotFound)
	}
	return r, nil
}

// SwapRun implements store.Store. The row, for a fenced swap the
// election token, and for a claim or skip the job's suspension, are read,
// checked and written under the file's write lock (BEGIN IMMEDIATE).
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	var out store.Run
	err := s.write(ctx, "swap run", func(tx *sql.Tx) error {
		r := sw.Run
		cur, _, err := getRun(ctx, tx, r.Job, r.Period)
		if err != nil {
			return err
		}
		var electionToken uint64
		if sw.Fenced {
			if electionToken, err = s.resolvedToken(ctx, tx, r.Job); err != nil {
				return err
			}
		}
		if err := storedriver.CheckRunSwap(cur, sw, electionToken); err != nil {
			return err
		}
		if sw.Claims() {
			// Under the same write lock as SuspendJob's: a suspension
			// commits before this read or after this write.
			job, found, err := s.jobTx(ctx, tx, r.Job)
			if err != nil {
				return err
			}
			if err := storedriver.CheckRunSuspended(sw, job, found); err != nil {
				return err
			}
		}
		if err := checkRun(r); err != nil {
			return err
		}
		if r.Version, err = nextVersion(ctx, tx, 0); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO baton_runs (job, period, `+runCols+`)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (job, period) DO UPDATE SET
			   scheduled_ns = excluded.scheduled_ns, state = excluded.state, token = excluded.token,
			   holder = excluded.holder, attempt = excluded.attempt, manual = excluded.manual,
			   started_ns = excluded.started_ns, finished_ns = excluded.finished_ns,
			   exit_code = excluded.exit_code, output = excluded.output, version = excluded.version`,
			r.Job, r.Period, nsOf(r.Scheduled), string(r.State), int64(r.Token), r.Holder, r.Attempt, r.Manual,
			nsOf(r.Started), nsOf(r.Finished), r.ExitCode, r.Output, r.Version)
		if err != nil {
			return err
		}
		// Return the row as a later GetRun reads it: times in UTC,
		// without a monotonic clock reading.
		r.Scheduled, r.Started, r.Finished = timeOf(nsOf(r.Scheduled)), timeOf(nsOf(r.Started)), timeOf(nsOf(r.Finished))
		out = r
		return nil
	})
	if err != nil {
		return store.Run{}, err
	}
	return out, nil
}

// checkRun refuses values the file cannot hold.
func checkRun(r store.Run) error {
	if err := storedriver.CheckRunToken(r.Job, r.Period, r.Token); err != nil {
		return err
	}
	if err := checkTime("Scheduled", r.Scheduled); err != nil {
		return err
	}
	if err := checkTime("Started", r.Started); err != nil {
		return err
	}
	return checkTime("Finished", r.Finished)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	const op = "runs"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return s.queryRuns(ctx, op, job,
		`SELECT period, `+runCols+` FROM baton_runs WHERE job = ? AND period > ? ORDER BY period LIMIT ?`,
		job, after, limit)
}

// queryRuns runs q, which selects period and runCols of job's rows, and
// scans its rows.
func (s *Store) queryRuns(ctx context.Context, op, job, q string, args ...any) ([]store.Run, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		var period string
		r, err := scanRun(scanFunc(func(dest ...any) error { return rows.Scan(append([]any{&period}, dest...)...) }))
		if err != nil {
			return nil, s.fail(ctx, op, err)
		}
		r.Job, r.Period = job, period
		if err := store.CheckRunState(job, period, r.State); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// RecentRuns implements store.Store. It walks the (job, period) primary
// key backwards: its cost grows with limit, not with the ledger.
func (s *Store) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	const op = "recent runs"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	q := `SELECT period, ` + runCols + ` FROM baton_runs WHERE job = ? ORDER BY period DESC LIMIT ?`
	args := []any{job, limit}
	if before != "" {
		q = `SELECT period, ` + runCols + ` FROM baton_runs WHERE job = ? AND period < ? ORDER BY period DESC LIMIT ?`
		args = []any{job, before, limit}
	}
	return s.queryRuns(ctx, op, job, q, args...)
}

// PruneRuns implements store.Store: one write transaction that deletes at
// most p.Limit rows.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	n := 0
	err := s.write(ctx, "prune runs", func(tx *sql.Tx) error {
		var token uint64
		if p.Fenced {
			var err error
			if token, err = s.resolvedToken(ctx, tx, p.Job); err != nil {
				return err
			}
		}
		if err := storedriver.CheckPrune(p, token); err != nil {
			return err
		}
		keepKey := ""
		if p.Keep > 0 {
			err := tx.QueryRowContext(ctx, `SELECT period FROM baton_runs WHERE job = ? ORDER BY period DESC LIMIT 1 OFFSET ?`, p.Job, p.Keep-1).Scan(&keepKey)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		before := storedriver.PruneBound(p, keepKey)
		states := make([]any, 0, len(p.States))
		for _, st := range p.States {
			states = append(states, string(st))
		}
		args := append([]any{p.Job, before, p.Job}, states...)
		args = append(args, p.Limit)
		res, err := tx.ExecContext(ctx,
			`DELETE FROM baton_runs WHERE job = ?1 AND period IN (
			   SELECT period FROM baton_runs
			    WHERE job = ?1 AND period < ?2
			      AND period <> coalesce((SELECT max(period) FROM baton_runs WHERE job = ?3 AND manual = 0), '')
			      AND state IN (`+placeholders(len(states), 4)+`)
			    ORDER BY period LIMIT ?`+itoa(4+len(states))+`)`, args...)
		if err != nil {
			return err
		}
		m, err := res.RowsAffected()
		n = int(m)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// placeholders returns n numbered parameters from ?first, comma-separated.
func placeholders(n, first int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = "?" + itoa(first+i)
	}
	return strings.Join(p, ", ")
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// UpdateJob implements store.Store.
func (s *Store) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	var out store.Job
	err := s.write(ctx, "update job", func(tx *sql.Tx) error {
		cur, found, err := s.jobTx(ctx, tx, u.Name)
		if err != nil {
			return err
		}
		if err := storedriver.CheckJobUpdate(u, cur, found); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE baton_jobs SET schedule = ? WHERE name = ?`, u.Schedule, u.Name); err != nil {
			return err
		}
		cur.Schedule = u.Schedule
		out = cur
		b := s.bind(ctx, tx)
		defer b.close()
		rec, found, err := s.settleName(ctx, b, u.Name)
		if err != nil || !found {
			return err
		}
		if rec.Version, err = nextVersion(ctx, tx, rec.Version); err != nil {
			return err
		}
		rec.Updated = s.now()
		// changed too: a change the holder must see (its feed names it).
		if _, err := tx.ExecContext(ctx, `UPDATE baton_election SET version = ?1, updated_ns = ?2, changed = ?1 WHERE name = ?3`,
			rec.Version, rec.Updated.UnixNano(), rec.Name); err != nil {
			return err
		}
		return appendEvent(ctx, tx, rec.Name, func(seq uint64) store.Event { return storedriver.RescheduledEvent(seq, rec, u, rec.Updated) })
	})
	if err != nil {
		return store.Job{}, err
	}
	return out, nil
}

// jobTx reads the job registration of name in tx; found is false when
// there is none.
func (s *Store) jobTx(ctx context.Context, tx *sql.Tx, name string) (j store.Job, found bool, err error) {
	j = store.Job{Name: name}
	err = s.scanJob(tx.QueryRowContext(ctx, `SELECT `+s.jobCols()+` FROM baton_jobs WHERE name = ?`, name), &j)
	if errors.Is(err, sql.ErrNoRows) {
		return j, false, nil
	}
	return j, err == nil, err
}

// appendEvent appends to the election log of name, in tx, the event that
// event makes with the next sequence number of that log. The name's
// election record must exist: its log_seq is raised to that number, in
// the same transaction (no record: sql.ErrNoRows, and nothing written).
func appendEvent(ctx context.Context, tx *sql.Tx, name string, event func(seq uint64) store.Event) error {
	var seq int64
	if err := tx.QueryRowContext(ctx, `UPDATE baton_election SET log_seq = log_seq + 1 WHERE name = ? RETURNING log_seq`, name).Scan(&seq); err != nil {
		return err
	}
	ev := event(uint64(seq))
	_, err := tx.ExecContext(ctx,
		`INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns, detail)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.Name, int64(ev.Seq), string(ev.Kind), ev.Holder, ev.Incarnation, int64(ev.Token), ev.Transfer, ev.Time.UnixNano(), ev.Detail)
	return err
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, name string) (store.Job, error) {
	const op = "get job"
	if err := s.enter(ctx, op); err != nil {
		return store.Job{}, err
	}
	j := store.Job{Name: name}
	err := s.scanJob(s.db.QueryRowContext(ctx, `SELECT `+s.jobCols()+` FROM baton_jobs WHERE name = ?`, name), &j)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.Job{}, s.fail(ctx, op, err)
	}
	return j, nil
}
