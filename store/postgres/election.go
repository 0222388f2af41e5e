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

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	if err := s.enter(ctx, "get"); err != nil {
		return store.Record{}, err
	}
	rec := store.Record{Name: name}
	var token, lease int64
	err := s.pool.QueryRow(ctx, s.sql.get, name).Scan(&rec.Holder, &rec.Incarnation, &token, &lease, &rec.Transfer, &rec.Version, &rec.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, fmt.Errorf("election %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return store.Record{}, s.fail(ctx, "get", err)
	}
	rec.Token, rec.Lease, rec.Updated = uint64(token), time.Duration(lease), rec.Updated.UTC()
	return rec, nil
}

// precheck refuses what must not reach the database: an empty name (with
// storedriver.CheckSwap's error, which checks the name before anything else) and
// a token that does not fit in a bigint. The other rules of CheckSwap
// depend on the current record: the swap function applies them in the
// database and swapResult reports them with CheckSwap itself.
func precheck(sw store.Swap) error {
	if sw.Record.Name == "" {
		return storedriver.CheckSwap(store.Record{}, sw)
	}
	if sw.Record.Token > math.MaxInt64 {
		return fmt.Errorf("%w: token %d of %q does not fit in a bigint", store.ErrInvalid, sw.Record.Token, sw.Record.Name)
	}
	return nil
}

func (s *Store) swapArgs(sw store.Swap) []any {
	r := sw.Record
	return []any{r.Name, sw.Expect, r.Holder, r.Incarnation, int64(r.Token), int64(r.Lease), r.Transfer, string(sw.Event), s.id}
}

// swapResult turns a row of the swap function into the stored record or,
// when the swap was refused, into storedriver.CheckSwap's error for the record
// the function compared against.
func (s *Store) swapResult(row pgx.Row, sw store.Swap) (store.Record, error) {
	// The compared record's columns are NULL when it does not exist.
	var (
		applied               bool
		holder, inc, transfer *string
		token, lease          *int64
		version               int64
		updated               *time.Time
	)
	err := row.Scan(&applied, &holder, &inc, &token, &lease, &transfer, &version, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		// No row: the schema holds another store id, and nothing was
		// written (see the swap statement).
		return store.Record{}, s.replaced("swap", "another id")
	}
	if err != nil {
		return store.Record{}, err
	}
	rec := store.Record{
		Name:        sw.Record.Name,
		Holder:      derefOr(holder, ""),
		Incarnation: derefOr(inc, ""),
		Token:       uint64(derefOr(token, 0)),
		Lease:       time.Duration(derefOr(lease, 0)),
		Transfer:    derefOr(transfer, ""),
		Version:     version,
		Updated:     derefOr(updated, time.Time{}).UTC(),
	}
	if applied {
		return rec, nil
	}
	if err := storedriver.CheckSwap(rec, sw); err != nil {
		return store.Record{}, err
	}
	return store.Record{}, fmt.Errorf("postgres: swap of %q refused by the database though storedriver.CheckSwap accepts it against %+v: %w", sw.Record.Name, rec, store.ErrConflict)
}

func derefOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Swap implements store.Store. It is one statement, one round trip: the
// schema's swap function compares, writes the record, appends the log
// event and notifies watchers in one transaction.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if err := s.enter(ctx, "swap"); err != nil {
		return store.Record{}, err
	}
	if err := s.writable("swap"); err != nil {
		return store.Record{}, err
	}
	if err := precheck(sw); err != nil {
		return store.Record{}, err
	}
	rec, err := s.swapResult(s.pool.QueryRow(ctx, s.sql.swap, s.swapArgs(sw)...), sw)
	if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid) && !errors.Is(err, store.ErrReplaced) {
		return store.Record{}, s.fail(ctx, "swap", err)
	}
	return rec, err
}

// SwapMany implements store.BatchSwapper. The swaps are sent as one
// pipelined batch, which PostgreSQL runs as one implicit transaction: one
// round trip, and either every swap's outcome stands or, when err is not
// nil, none was applied (unless err wraps store.ErrUnavailable, in which
// case the outcome is unknown).
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	if err := s.enter(ctx, "swap many"); err != nil {
		return nil, err
	}
	if err := s.writable("swap many"); err != nil {
		return nil, err
	}
	res := make([]store.SwapResult, len(swaps))
	batch := &pgx.Batch{}
	var sent []int
	for i, sw := range swaps {
		if err := precheck(sw); err != nil {
			res[i].Err = err
			continue
		}
		batch.Queue(s.sql.swap, s.swapArgs(sw)...)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return res, nil
	}
	br := s.pool.SendBatch(ctx, batch)
	for _, i := range sent {
		rec, err := s.swapResult(br.QueryRow(), swaps[i])
		if errors.Is(err, store.ErrReplaced) {
			br.Close()
			return nil, err
		}
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid) {
			br.Close()
			return nil, s.fail(ctx, "swap many", err)
		}
		res[i] = store.SwapResult{Record: rec, Err: err}
	}
	if err := br.Close(); err != nil {
		return nil, s.fail(ctx, "swap many", err)
	}
	return res, nil
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	if err := s.enter(ctx, "history"); err != nil {
		return nil, err
	}
	if after >= math.MaxInt64 {
		return nil, nil
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, s.sql.history, name, int64(after), lim)
	if err != nil {
		return nil, s.fail(ctx, "history", err)
	}
	var out []store.Event
	for rows.Next() {
		ev := store.Event{Name: name}
		var seq, token int64
		var kind string
		if err := rows.Scan(&seq, &kind, &ev.Holder, &ev.Incarnation, &token, &ev.Transfer, &ev.Time, &ev.Detail); err != nil {
			rows.Close()
			return nil, s.fail(ctx, "history", err)
		}
		ev.Seq, ev.Kind, ev.Token, ev.Time = uint64(seq), store.EventKind(kind), uint64(token), ev.Time.UTC()
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "history", err)
	}
	return out, nil
}

// Heartbeat implements store.Store. Since and Seen are the server's time.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	if err := s.enter(ctx, "heartbeat"); err != nil {
		return err
	}
	if err := s.writable("heartbeat"); err != nil {
		return err
	}
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, "heartbeat"); refused != nil || err != nil {
			return err
		}
		if c.Gone {
			_, err = tx.Exec(ctx, `DELETE FROM `+s.q+`.candidates WHERE name = $1 AND node = $2`, c.Name, c.Node)
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+s.q+`.candidates AS c (name, node, incarnation, every_ns, since, seen)
			VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp())
			ON CONFLICT (name, node) DO UPDATE SET
			  since = CASE WHEN c.incarnation = excluded.incarnation THEN c.since ELSE excluded.since END,
			  incarnation = excluded.incarnation, every_ns = excluded.every_ns, seen = excluded.seen`,
			c.Name, c.Node, c.Incarnation, int64(c.Every))
		return err
	})
	if err != nil {
		return s.fail(ctx, "heartbeat", err)
	}
	return refused
}

// Candidates implements store.Store. Age is measured on the server's
// clock, the one Seen was written with.
func (s *Store) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	if err := s.enter(ctx, "candidates"); err != nil {
		return nil, err
	}
	if s.version == 1 {
		return nil, nil // a version 1 schema, read-only: no candidates table
	}
	rows, err := s.pool.Query(ctx, `SELECT node, incarnation, every_ns, since, seen,
		  (extract(epoch FROM clock_timestamp() - seen) * 1000000)::bigint
		FROM `+s.q+`.candidates WHERE name = $1 ORDER BY node`, name)
	if err != nil {
		return nil, s.fail(ctx, "candidates", err)
	}
	var out []store.Candidate
	for rows.Next() {
		c := store.Candidate{Name: name}
		var every, ageUS int64
		if err := rows.Scan(&c.Node, &c.Incarnation, &every, &c.Since, &c.Seen, &ageUS); err != nil {
			rows.Close()
			return nil, s.fail(ctx, "candidates", err)
		}
		c.Every, c.Since, c.Seen = time.Duration(every), c.Since.UTC(), c.Seen.UTC()
		c.Age = time.Duration(min(ageUS, math.MaxInt64/1000)) * time.Microsecond
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "candidates", err)
	}
	return out, nil
}
