package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Get implements store.Store: one statement, which reads the record and
// the session record it names; a record a succession passed on is read
// again with its chain (readResolved).
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	const op = "get"
	if err := s.enter(ctx, op); err != nil {
		return store.Record{}, err
	}
	_, res, err := s.readResolved(ctx, op, s.sql.get, name)
	if err != nil {
		return store.Record{}, s.failResolve(ctx, op, err)
	}
	if len(res) == 0 {
		return store.Record{}, notFound(name)
	}
	return res[0].rec, nil
}

func notFound(name string) error { return fmt.Errorf("election %q: %w", name, store.ErrNotFound) }

// GetMany implements store.Store: one statement for the whole batch,
// one primary key probe per name and one per distinct session record
// they name, which reads every record in one snapshot; a batch with a
// record that a succession passed on is read again with the chains
// (readResolved).
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	const op = "get many"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	res := make([]store.GetResult, len(names))
	if len(names) == 0 {
		return res, nil
	}
	ords, recs, err := s.readResolved(ctx, op, s.sql.getMany, names)
	if err != nil {
		return nil, s.failResolve(ctx, op, err)
	}
	found := make([]bool, len(names))
	for i, ord := range ords {
		if ord < 1 || ord > int64(len(names)) {
			return nil, fmt.Errorf("postgres: %s: row %d for %d names", op, ord, len(names))
		}
		res[ord-1].Record, found[ord-1] = recs[i].rec, true
	}
	for i, n := range names {
		if !found[i] {
			res[i].Err = notFound(n)
		}
	}
	return res, nil
}

// precheck refuses what must not reach the database: a name that is not
// one (with storedriver.CheckSwap's error, which checks the name before
// anything else), a token that does not fit in a bigint, and a NUL byte,
// which a text value cannot hold (in a batch it would fail every swap of
// it). The other rules of CheckSwap depend on the current record: the
// swap function applies them in the database and swapRow.outcome reports
// them with CheckSwap itself (a swap with a successor is decided in Go,
// swapInTx).
func precheck(sw store.Swap) error {
	r := sw.Record
	if err := store.CheckName(r.Name); err != nil {
		return storedriver.CheckSwap(store.Record{}, sw)
	}
	if err := storedriver.CheckElectionToken(r.Name, r.Token); err != nil {
		return err // a bigint holds no more
	}
	for _, v := range []string{r.Holder, r.Incarnation, r.Transfer, r.Session, r.Successor, string(sw.Event)} {
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: swap of %q: a value contains a NUL byte, which the store cannot hold", store.ErrInvalid, r.Name)
		}
	}
	return nil
}

// swapRow is a row of the swap functions: whether the swap applied, and
// the stored record or the one it was compared against (without its name).
type swapRow struct {
	applied bool
	rec     store.Record
}

// scanSwapRow reads a row of the swap functions, after the columns first.
func scanSwapRow(row pgx.Row, first ...any) (swapRow, error) {
	// The compared record's columns are NULL when it does not exist.
	var (
		applied                        bool
		holder, inc, transfer, session *string
		token, lease                   *int64
		version                        int64
		updated                        *time.Time
	)
	if err := row.Scan(append(first, &applied, &holder, &inc, &token, &lease, &transfer, &session, &version, &updated)...); err != nil {
		return swapRow{}, err
	}
	return swapRow{applied: applied, rec: store.Record{
		Holder:      derefOr(holder, ""),
		Incarnation: derefOr(inc, ""),
		Token:       uint64(derefOr(token, 0)),
		Lease:       time.Duration(derefOr(lease, 0)),
		Transfer:    derefOr(transfer, ""),
		Session:     derefOr(session, ""),
		Version:     version,
		Updated:     derefOr(updated, time.Time{}).UTC(),
	}}, nil
}

// outcome turns a row of the swap functions for sw into the stored record
// or, when the swap was refused, into storedriver.CheckSwap's error for the
// record the function compared against.
func (r swapRow) outcome(sw store.Swap) (store.Record, error) {
	rec := r.rec
	rec.Name = sw.Record.Name
	if r.applied {
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
// schema's swap_one function compares, writes the record, appends the log
// event and notifies watchers in one transaction. A swap that may be a
// renewal (no event, a held record, an expected version) is tried first
// as the renewal's one-row UPDATE (statements.renew; for a session record
// statements.renewSession, which also notifies the change feed's
// listeners of the record's new version), which leaves the wxid column
// out; when it matches no row, swap_one decides, a second round trip.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	const op = "swap"
	if err := s.enter(ctx, op); err != nil {
		return store.Record{}, err
	}
	if err := s.writable(op); err != nil {
		return store.Record{}, err
	}
	if err := precheck(sw); err != nil {
		return store.Record{}, err
	}
	r := sw.Record
	if r.Successor != "" {
		// A succession write: decided in Go (swapInTx).
		res, err := s.swapSlow(ctx, op, []store.Swap{sw})
		if err != nil {
			return store.Record{}, err
		}
		return res[0].Record, res[0].Err
	}
	// A session record held through a session is none baton writes:
	// swap_one decides (renewSession compares with no session).
	if sw.Event == "" && sw.Expect != 0 && r.Holder != "" && !(store.IsSession(r.Name) && r.Session != "") {
		// Perhaps a renewal: one UPDATE of one row (statements.renew,
		// renewSession).
		var (
			version int64
			updated time.Time
			err     error
		)
		if store.IsSession(r.Name) {
			err = s.swaps.QueryRow(ctx, s.sql.renewSession, s.id, r.Name, sw.Expect, r.Holder, r.Incarnation,
				int64(r.Token), int64(r.Lease), r.Transfer, s.channel).Scan(&version, &updated, nil)
		} else {
			err = s.swaps.QueryRow(ctx, s.sql.renew, s.id, r.Name, sw.Expect, r.Holder, r.Incarnation,
				int64(r.Token), int64(r.Lease), r.Transfer, r.Session).Scan(&version, &updated)
		}
		if err == nil {
			rec := r
			rec.Version, rec.Updated = version, updated.UTC()
			return rec, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Record{}, s.fail(ctx, op, err)
		}
		// Not a renewal of the record as stored: swap_one decides.
	}
	row, err := scanSwapRow(s.swaps.QueryRow(ctx, s.sql.swapOne, s.id, r.Name, sw.Expect, r.Holder, r.Incarnation,
		int64(r.Token), int64(r.Lease), r.Transfer, r.Session, string(sw.Event)))
	if isSuccession(err) {
		// A session of the record was passed on: settled and decided
		// in Go (swapInTx).
		res, err := s.swapSlow(ctx, op, []store.Swap{sw})
		if err != nil {
			return store.Record{}, err
		}
		return res[0].Record, res[0].Err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// No row: the schema holds another store id, and nothing was
		// written (see swap_one).
		return store.Record{}, s.replaced(op, "another id")
	}
	if err != nil {
		return store.Record{}, s.fail(ctx, op, err)
	}
	return row.outcome(sw)
}

// SwapMany implements store.Store. The whole batch is one
// statement, one round trip and one transaction: the schema's swap_many
// function locks the batch's records in name order (so that batches
// running at the same time never deadlock), decides each swap
// independently of the others (a refused swap leaves the others be),
// writes the records and their log events with one statement each, and
// sends one notification for all. A name that comes more than once is
// swapped in the order given, each swap against the record the previous
// one left. Either every swap's outcome stands or, when err is not nil,
// none was applied (unless err wraps store.ErrUnavailable, in which case
// the outcome is unknown). There is no size limit; a batch holds the row
// locks of its records until it commits.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	const op = "swap many"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if err := s.writable(op); err != nil {
		return nil, err
	}
	res := make([]store.SwapResult, len(swaps))
	var (
		sent []int
		sub  []store.Swap
	)
	for i, sw := range swaps {
		if err := precheck(sw); err != nil {
			res[i].Err = err
			continue
		}
		sent = append(sent, i)
		sub = append(sub, sw)
	}
	if len(sent) == 0 {
		return res, nil
	}
	var (
		got []store.SwapResult
		err error
	)
	switch {
	case slices.ContainsFunc(sub, func(sw store.Swap) bool { return sw.Record.Successor != "" }):
		// A succession write: the batch is decided in Go, in order.
		got, err = s.swapSlow(ctx, op, sub)
	default:
		got, err = s.swapBatch(ctx, s.pool, op, sub)
		if isSuccession(err) {
			// A name a succession passed on: settled first.
			got, err = s.swapManySettled(ctx, op, sub)
		} else if err != nil {
			err = s.fail(ctx, op, err)
		}
	}
	if err != nil {
		return nil, err
	}
	for k, i := range sent {
		res[i] = got[k]
	}
	return res, nil
}

// swapBatch applies swaps, which passed precheck, with one call of the
// schema's swap_many function on q (the pool, or a transaction), and
// returns their outcomes in order. err is not nil when the call as a
// whole failed: a driver's error, not mapped (fail), which may be
// swap_many's refusal of a batch it leaves to Go (isSuccession).
func (s *Store) swapBatch(ctx context.Context, q querier, op string, swaps []store.Swap) ([]store.SwapResult, error) {
	n := len(swaps)
	var (
		names, holders, incs, transfers, sessions, events = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		expects, tokens, leases                           = make([]int64, n), make([]int64, n), make([]int64, n)
		rounds                                            = make([]int32, n)
		seen                                              = make(map[string]int32, n)
	)
	for k, sw := range swaps {
		r := sw.Record
		seen[r.Name]++
		rounds[k] = seen[r.Name] // the k-th swap of a name goes in round k
		names[k], holders[k], incs[k], transfers[k], sessions[k], events[k] = r.Name, r.Holder, r.Incarnation, r.Transfer, r.Session, string(sw.Event)
		expects[k], tokens[k], leases[k] = sw.Expect, int64(r.Token), int64(r.Lease)
	}
	rows, err := q.Query(ctx, s.sql.swapMany, s.id, rounds, names, expects, holders, incs, tokens, leases, transfers, sessions, events)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := make([]store.SwapResult, n)
	got := 0
	for rows.Next() {
		var ord int32
		r, err := scanSwapRow(rows, &ord)
		if err != nil {
			return nil, err
		}
		if ord < 1 || int(ord) > n {
			return nil, fmt.Errorf("postgres: %s: swap_many returned row %d for %d swaps", op, ord, n)
		}
		rec, err := r.outcome(swaps[ord-1])
		res[ord-1] = store.SwapResult{Record: rec, Err: err}
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if got == 0 {
		// No rows: the schema holds another store id, and nothing was
		// written (see swap_many).
		return nil, s.replaced(op, "another id")
	}
	if got != n {
		return nil, fmt.Errorf("postgres: %s: swap_many returned %d rows for %d swaps", op, got, n)
	}
	return res, nil
}

// History implements store.Store: in one snapshot (a read-only
// REPEATABLE READ transaction), the stored log and, after it, the events
// of the successions that passed the record on since its last write
// (unstored: the name's next write stores them first, with the same
// numbers).
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	const op = "history"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if after >= math.MaxInt64 {
		return nil, nil
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	var out []store.Event
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, s.sql.history, name, int64(after), lim)
		if err != nil {
			return err
		}
		for rows.Next() {
			ev := store.Event{Name: name}
			var seq, token int64
			var kind string
			if err := rows.Scan(&seq, &kind, &ev.Holder, &ev.Incarnation, &token, &ev.Transfer, &ev.Time, &ev.Detail); err != nil {
				rows.Close()
				return err
			}
			ev.Seq, ev.Kind, ev.Token, ev.Time = uint64(seq), store.EventKind(kind), uint64(token), ev.Time.UTC()
			out = append(out, ev)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if limit > 0 && len(out) >= limit {
			return nil
		}
		c := s.newChain(op, tx, false)
		_, raws, err := c.readRows(ctx, tx, s.sql.get, true, name)
		if err != nil || len(raws) == 0 {
			return err
		}
		res, err := c.resolve(ctx, raws, true)
		if err != nil || len(res[0].events) == 0 {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, s.sql.lastSeq, name).Scan(&last); err != nil {
			return err
		}
		for _, ev := range res[0].events {
			ev.Seq += uint64(last)
			if ev.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, ev)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.failResolve(ctx, op, err)
	}
	return out, nil
}

// Heartbeat implements store.Store. Since and Seen are the server's time.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return fmt.Errorf("%w: a candidate needs a name and a node", store.ErrInvalid)
	}
	if err := store.CheckAttrs(c.Attrs); err != nil {
		return fmt.Errorf("postgres: %w", err)
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
		_, err = tx.Exec(ctx, `INSERT INTO `+s.q+`.candidates AS c (name, node, incarnation, every_ns, since, seen, attrs)
			VALUES ($1, $2, $3, $4, clock_timestamp(), clock_timestamp(), $5)
			ON CONFLICT (name, node) DO UPDATE SET
			  since = CASE WHEN c.incarnation = excluded.incarnation THEN c.since ELSE excluded.since END,
			  incarnation = excluded.incarnation, every_ns = excluded.every_ns, seen = excluded.seen, attrs = excluded.attrs`,
			c.Name, c.Node, c.Incarnation, int64(c.Every), c.Attrs)
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
	attrs := "attrs"
	if s.version < 10 {
		attrs = "''" // read-only: no attributes before version 10
	}
	rows, err := s.pool.Query(ctx, `SELECT node, incarnation, every_ns, since, seen,
		  (extract(epoch FROM clock_timestamp() - seen) * 1000000)::bigint, `+attrs+`
		FROM `+s.q+`.candidates WHERE name = $1 ORDER BY node`, name)
	if err != nil {
		return nil, s.fail(ctx, "candidates", err)
	}
	var out []store.Candidate
	for rows.Next() {
		c := store.Candidate{Name: name}
		var every, ageUS int64
		if err := rows.Scan(&c.Node, &c.Incarnation, &every, &c.Since, &c.Seen, &ageUS, &c.Attrs); err != nil {
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
