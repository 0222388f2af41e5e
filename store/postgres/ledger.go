package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	if err := s.enter(ctx, "ensure job"); err != nil {
		return store.Job{}, err
	}
	got := store.Job{Name: j.Name}
	err := s.pool.QueryRow(ctx, s.sql.ensureJob, j.Name, j.Schedule).Scan(&got.Schedule, &got.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		// Registered before (perhaps concurrently, committed by now).
		err = s.pool.QueryRow(ctx, s.sql.getJob, j.Name).Scan(&got.Schedule, &got.Created)
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

// SwapRun implements store.Store. One transaction: a fenced swap first
// takes a share lock on the job's election record, so that no takeover can
// commit between the token check and the write; then the row is locked,
// checked with storedriver.CheckRunSwap, and written.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := s.enter(ctx, "swap run"); err != nil {
		return store.Run{}, err
	}
	r := sw.Run
	// Request-only rules first (a current row at the expected version
	// passes the version rule; the fence is checked in the transaction).
	if err := storedriver.CheckRunSwap(store.Run{Version: sw.Expect}, store.RunSwap{Expect: sw.Expect, Run: r}, 0); err != nil {
		return store.Run{}, err
	}
	if r.Token > math.MaxInt64 {
		return store.Run{}, fmt.Errorf("%w: token %d of run %s/%s does not fit in a bigint", store.ErrInvalid, r.Token, r.Job, r.Period)
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
		var electionToken int64
		if sw.Fenced {
			err := tx.QueryRow(ctx, s.sql.electionToken, r.Job).Scan(&electionToken)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		cur, err := scanRun(tx.QueryRow(ctx, s.sql.lockRun, r.Job, r.Period))
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if refused = storedriver.CheckRunSwap(cur, sw, uint64(electionToken)); refused != nil {
			return nil // nothing written; the rollback is harmless
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
				if refused = storedriver.CheckRunSwap(cur, sw, uint64(electionToken)); refused == nil {
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
		return store.Run{}, s.fail(ctx, "swap run", err)
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
