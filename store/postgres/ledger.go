package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// EnsureJob implements store.Store.
func (s *Store) EnsureJob(ctx context.Context, j store.Job) (store.Job, error) {
	if j.Name == "" {
		return store.Job{}, fmt.Errorf("%w: empty job name", store.ErrInvalid)
	}
	if err := storedriver.CheckJob(j); err != nil {
		return store.Job{}, fmt.Errorf("postgres: %w", err)
	}
	if err := s.enter(ctx, "ensure job"); err != nil {
		return store.Job{}, err
	}
	if err := s.writable("ensure job"); err != nil {
		return store.Job{}, err
	}
	got := store.Job{Name: j.Name}
	err := scanJob(s.pool.QueryRow(ctx, s.sql.ensureJob, j.Name, j.Schedule, j.Prefer, int64(j.PreferHysteresis)), &got)
	if errors.Is(err, pgx.ErrNoRows) {
		// Registered before (perhaps concurrently, committed by now).
		err = scanJob(s.pool.QueryRow(ctx, s.sql.getJob, j.Name), &got)
	}
	if err != nil {
		return store.Job{}, s.fail(ctx, "ensure job", err)
	}
	got.Created = got.Created.UTC()
	return got, nil
}

// scanRun scans the run columns of a row.
func scanRun(row pgx.Row) (store.Run, error) {
	var (
		r                          store.Run
		state                      string
		token, attempt, exit       int64
		scheduled, started, finish *time.Time
		output                     []byte
	)
	err := row.Scan(&r.Job, &r.Period, &scheduled, &state, &token, &r.Holder, &attempt, &r.Manual, &started, &finish, &exit, &output, &r.Version)
	if err != nil {
		return store.Run{}, err
	}
	r.State, r.Token, r.Attempt, r.ExitCode, r.Output = store.RunState(state), uint64(token), int(attempt), int(exit), string(output)
	r.Scheduled, r.Started, r.Finished = fromNull(scheduled), fromNull(started), fromNull(finish)
	if err := store.CheckRunState(r.Job, r.Period, r.State); err != nil {
		return store.Run{}, err
	}
	return r, nil
}

// toNull stores the zero time as NULL, so that it reads back as zero.
// PostgreSQL keeps microseconds: finer digits are dropped.
func toNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func fromNull(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// GetRun implements store.Store.
func (s *Store) GetRun(ctx context.Context, job, period string) (store.Run, error) {
	if err := s.enter(ctx, "get run"); err != nil {
		return store.Run{}, err
	}
	r, err := scanRun(s.pool.QueryRow(ctx, s.sql.getRun, job, period))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Run{}, fmt.Errorf("run %s/%s: %w", job, period, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, s.fail(ctx, "get run", err)
	}
	return r, nil
}

// SwapRun implements store.Store. One transaction: a claim or skip first
// takes a share lock on the job (its suspension), a fenced swap then a
// share lock on the job's election record and a key share lock on the
// session records of its chain (its token is the resolved one), so that
// no suspension, takeover or succession can commit between the checks and
// the write; then the row is
// locked, checked with storedriver.CheckRunSwap and CheckRunSuspended, and
// written.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := s.enter(ctx, "swap run"); err != nil {
		return store.Run{}, err
	}
	if err := s.writable("swap run"); err != nil {
		return store.Run{}, err
	}
	r := sw.Run
	// Request-only rules first (a current row at the expected version
	// passes the version rule; the fence is checked in the transaction),
	// the token's bound among them: a bigint holds no more.
	if err := storedriver.CheckRunSwap(store.Run{Version: sw.Expect}, store.RunSwap{Expect: sw.Expect, Run: r}, 0); err != nil {
		return store.Run{}, err
	}
	var out store.Run
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id string
		if err := tx.QueryRow(ctx, storeIDQuery(s.q)).Scan(&id); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if id != s.id {
			refused = s.replaced("swap run", "id "+id)
			return nil
		}
		// A claim or skip first takes a share lock on the job, which
		// SuspendJob locks for update: a suspension commits before this
		// read or after this transaction. The job before the election
		// record, in the order of SuspendJob and UpdateJob.
		var job store.Job
		var suspendedAt *time.Time
		found := false
		if sw.Claims() {
			err := tx.QueryRow(ctx, `SELECT suspended_at, suspended_by FROM `+s.q+`.jobs WHERE name = $1 FOR SHARE`, r.Job).Scan(&suspendedAt, &job.Suspension.By)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			found, job.Suspension.At = err == nil, fromNull(suspendedAt)
		}
		var electionToken uint64
		if sw.Fenced {
			// The resolved token (succession.go), the record and its
			// chain locked until the commit.
			var err error
			if electionToken, err = s.resolvedToken(ctx, tx, "swap run", r.Job); err != nil {
				return err
			}
		}
		cur, err := scanRun(tx.QueryRow(ctx, s.sql.lockRun, r.Job, r.Period))
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if refused = storedriver.CheckRunSwap(cur, sw, electionToken); refused != nil {
			return nil // nothing written; the rollback is harmless
		}
		if refused = storedriver.CheckRunSuspended(sw, job, found); refused != nil {
			return nil
		}
		args := []any{r.Job, r.Period, toNull(r.Scheduled), string(r.State), int64(r.Token), r.Holder, int64(r.Attempt),
			r.Manual, toNull(r.Started), toNull(r.Finished), int64(r.ExitCode), []byte(r.Output)}
		if cur.Version == 0 {
			out, err = scanRun(tx.QueryRow(ctx, s.sql.insertRun, args...))
			if errors.Is(err, pgx.ErrNoRows) {
				// A concurrent creator committed first; this
				// statement sees its row.
				cur, err = scanRun(tx.QueryRow(ctx, s.sql.getRun, r.Job, r.Period))
				if err != nil {
					return err
				}
				if refused = storedriver.CheckRunSwap(cur, sw, electionToken); refused == nil {
					refused = fmt.Errorf("%w: run %s/%s was created concurrently", store.ErrConflict, r.Job, r.Period)
				}
				return nil
			}
			return err
		}
		out, err = scanRun(tx.QueryRow(ctx, s.sql.updateRun, args...))
		return err
	})
	if err != nil {
		return store.Run{}, s.failResolve(ctx, "swap run", err)
	}
	if refused != nil {
		return store.Run{}, refused
	}
	return out, nil
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, job, after string, limit int) ([]store.Run, error) {
	if err := s.enter(ctx, "runs"); err != nil {
		return nil, err
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, s.sql.runs, job, after, lim)
	if err != nil {
		return nil, s.fail(ctx, "runs", err)
	}
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, s.fail(ctx, "runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "runs", err)
	}
	return out, nil
}

// RecentRuns implements store.Store: a backward walk of the (job, period)
// primary key, whose cost grows with limit, not with the ledger.
func (s *Store) RecentRuns(ctx context.Context, job, before string, limit int) ([]store.Run, error) {
	if err := s.enter(ctx, "recent runs"); err != nil {
		return nil, err
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT job, period, scheduled, state, token, holder, attempt, manual, started, finished, exit_code, output, version
		FROM `+s.q+`.runs WHERE job = $1 AND ($2 = '' OR period < $2) ORDER BY period DESC LIMIT $3`, job, before, lim)
	if err != nil {
		return nil, s.fail(ctx, "recent runs", err)
	}
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, s.fail(ctx, "recent runs", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "recent runs", err)
	}
	return out, nil
}

// PruneRuns implements store.Store. One transaction: a fenced prune first
// takes a share lock on the job's election record and its chain, and
// compares the resolved token, as SwapRun does.
func (s *Store) PruneRuns(ctx context.Context, p store.Prune) (int, error) {
	if err := s.enter(ctx, "prune runs"); err != nil {
		return 0, err
	}
	if err := s.writable("prune runs"); err != nil {
		return 0, err
	}
	if err := storedriver.CheckPrune(p, p.Token); err != nil {
		return 0, err
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = string(st)
	}
	var n int64
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, "prune runs"); refused != nil || err != nil {
			return err
		}
		if p.Fenced {
			token, err := s.resolvedToken(ctx, tx, "prune runs", p.Job)
			if err != nil {
				return err
			}
			if refused = storedriver.CheckPrune(p, token); refused != nil {
				return nil
			}
		}
		keepKey := ""
		if p.Keep > 0 {
			err := tx.QueryRow(ctx, `SELECT period FROM `+s.q+`.runs WHERE job = $1 ORDER BY period DESC LIMIT 1 OFFSET $2`, p.Job, p.Keep-1).Scan(&keepKey)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		before := storedriver.PruneBound(p, keepKey)
		tag, err := tx.Exec(ctx, `DELETE FROM `+s.q+`.runs WHERE job = $1 AND period IN (
			SELECT period FROM `+s.q+`.runs
			 WHERE job = $1 AND period < $2 AND state = ANY($3)
			   AND period <> coalesce((SELECT max(period) FROM `+s.q+`.runs WHERE job = $1 AND NOT manual), '')
			 ORDER BY period LIMIT $4 FOR UPDATE)`, p.Job, before, states, p.Limit)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, s.failResolve(ctx, "prune runs", err)
	}
	if refused != nil {
		return 0, refused
	}
	return int(n), nil
}

// UpdateJob implements store.Store: one transaction that locks the job and
// the election record, changes both and appends the event, and notifies
// the record's watchers.
func (s *Store) UpdateJob(ctx context.Context, u store.JobUpdate) (store.Job, error) {
	if err := s.enter(ctx, "update job"); err != nil {
		return store.Job{}, err
	}
	if err := s.writable("update job"); err != nil {
		return store.Job{}, err
	}
	var out store.Job
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, "update job"); refused != nil || err != nil {
			return err
		}
		cur := store.Job{Name: u.Name}
		err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols(s.version)+` FROM `+s.q+`.jobs WHERE name = $1 FOR UPDATE`, u.Name), &cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if refused = storedriver.CheckJobUpdate(u, cur, err == nil); refused != nil {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE `+s.q+`.jobs SET schedule = $2 WHERE name = $1`, u.Name, u.Schedule); err != nil {
			return err
		}
		cur.Schedule, cur.Created = u.Schedule, cur.Created.UTC()
		out = cur
		tag, err := tx.Exec(ctx, `WITH rec AS (
			UPDATE `+s.q+`.election SET version = nextval('`+s.q+`.version_seq'), updated = clock_timestamp(),
			       wxid = `+currentXID+`
			 WHERE name = $1 RETURNING name, holder, incarnation, token, transfer, updated)
			INSERT INTO `+s.q+`.election_log (name, seq, kind, holder, incarnation, token, transfer, time, detail)
			SELECT rec.name, coalesce((SELECT max(seq) FROM `+s.q+`.election_log WHERE name = $1), 0) + 1, $2,
			       rec.holder, rec.incarnation, rec.token, rec.transfer, rec.updated, $3
			  FROM rec`, u.Name, string(store.Rescheduled), u.Expect+" -> "+u.Schedule)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, notifyPayload)
		return err
	})
	if err != nil {
		return store.Job{}, s.fail(ctx, "update job", err)
	}
	if refused != nil {
		return store.Job{}, refused
	}
	return out, nil
}

// GetJob implements store.Store.
func (s *Store) GetJob(ctx context.Context, name string) (store.Job, error) {
	if err := s.enter(ctx, "get job"); err != nil {
		return store.Job{}, err
	}
	j := store.Job{Name: name}
	err := scanJob(s.pool.QueryRow(ctx, s.sql.getJob, name), &j)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.Job{}, s.fail(ctx, "get job", err)
	}
	j.Created = j.Created.UTC()
	return j, nil
}
