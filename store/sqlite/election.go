package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// recordCols are the election record's columns as recordOf scans them,
// after the name.
const recordCols = `holder, incarnation, token, lease_ns, transfer, version, updated_ns, `

// recordOf scans one row of name and recordCols, plus the session column.
func recordOf(row interface{ Scan(...any) error }) (store.Record, error) {
	var rec store.Record
	var token, lease int64
	err := row.Scan(&rec.Name, &rec.Holder, &rec.Incarnation, &token, &lease, &rec.Transfer, &rec.Version, nsScanner{&rec.Updated}, &rec.Session)
	rec.Token, rec.Lease = uint64(token), time.Duration(lease)
	return rec, err
}

// getRecord reads the election record of name, inside tx or, with a nil
// tx, on its own; a missing record is the zero Record (Version 0) and found
// false.
func (s *Store) getRecord(ctx context.Context, tx *sql.Tx, name string) (rec store.Record, found bool, err error) {
	st := s.st.get
	if tx != nil {
		st = tx.StmtContext(ctx, st)
		defer st.Close()
	}
	return getRecordWith(ctx, st, name)
}

func getRecordWith(ctx context.Context, get *sql.Stmt, name string) (store.Record, bool, error) {
	rec, err := recordOf(get.QueryRowContext(ctx, name))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, false, nil
	}
	if err != nil {
		return store.Record{}, false, err
	}
	return rec, true, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	const op = "get"
	if err := s.enter(ctx, op); err != nil {
		return store.Record{}, err
	}
	rec, found, err := s.getRecord(ctx, nil, name)
	if err != nil {
		return store.Record{}, s.fail(ctx, op, err)
	}
	if !found {
		return store.Record{}, fmt.Errorf("sqlite: election %q: %w", name, store.ErrNotFound)
	}
	return rec, nil
}

// GetManyChunk is how many names GetMany reads with one query.
const GetManyChunk = 1000

// GetMany implements store.BatchGetter: one query per GetManyChunk names,
// each a read of its own (the names of one chunk are read in one
// snapshot, the chunks one after another).
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	const op = "get many"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	res := make([]store.GetResult, len(names))
	found := make(map[string]store.Record, min(len(names), GetManyChunk))
	for lo := 0; lo < len(names); lo += GetManyChunk {
		chunk := names[lo:min(lo+GetManyChunk, len(names))]
		clear(found)
		if err := readMany(ctx, s.st.getMany, chunk, found); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		for i, name := range chunk {
			if rec, ok := found[name]; ok {
				res[lo+i].Record = rec
			} else {
				res[lo+i].Err = fmt.Errorf("sqlite: election %q: %w", name, store.ErrNotFound)
			}
		}
	}
	return res, nil
}

// readMany reads the records of names with getMany into found.
func readMany(ctx context.Context, getMany *sql.Stmt, names []string, found map[string]store.Record) error {
	arg, err := json.Marshal(names)
	if err != nil {
		return err
	}
	rows, err := getMany.QueryContext(ctx, string(arg))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := recordOf(rows)
		if err != nil {
			return err
		}
		found[rec.Name] = rec
	}
	return rows.Err()
}

// Swap implements store.Store. The record is read, compared and written
// under the file's write lock (BEGIN IMMEDIATE), so a swap is atomic with
// respect to every other connection to the file, in any process.
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	res, err := s.swapMany(ctx, "swap", []store.Swap{sw})
	if err != nil {
		return store.Record{}, err
	}
	return res[0].Record, res[0].Err
}

// SwapMany implements store.BatchSwapper: all swaps are applied in one
// write transaction (one fsync), in order, each compared with the record as
// left by the swaps before it. A swap refused by the contract (conflict,
// invalid) is reported in its result and does not stop the others. Its
// statements are prepared once per connection, and the store's version
// counter is read and written once per batch.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	return s.swapMany(ctx, "swap many", swaps)
}

func (s *Store) swapMany(ctx context.Context, op string, swaps []store.Swap) ([]store.SwapResult, error) {
	res := make([]store.SwapResult, len(swaps))
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		b := s.bind(ctx, tx)
		defer b.close()
		var last int64
		if err := b.lastVersion.QueryRowContext(ctx).Scan(&last); err != nil {
			return err
		}
		cur, err := s.current(ctx, b, swaps)
		if err != nil {
			return err
		}
		next := last
		for i, sw := range swaps {
			rec, err := s.swapTx(ctx, b, cur[sw.Record.Name], sw, next+1)
			if err != nil && !decided(err) {
				return err
			}
			if err == nil {
				next++
				cur[rec.Name] = rec
			}
			res[i] = store.SwapResult{Record: rec, Err: err}
		}
		if next == last {
			return nil
		}
		_, err = b.setVersion.ExecContext(ctx, next)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// current reads, inside b's transaction, the records the swaps name: one
// query for one swap, one per GetManyChunk names for more.
func (s *Store) current(ctx context.Context, b *bound, swaps []store.Swap) (map[string]store.Record, error) {
	cur := make(map[string]store.Record, len(swaps))
	if len(swaps) == 1 {
		rec, _, err := getRecordWith(ctx, b.get, swaps[0].Record.Name)
		cur[swaps[0].Record.Name] = rec
		return cur, err
	}
	names := make([]string, 0, min(len(swaps), GetManyChunk))
	for lo := 0; lo < len(swaps); lo += GetManyChunk {
		names = names[:0]
		for _, sw := range swaps[lo:min(lo+GetManyChunk, len(swaps))] {
			names = append(names, sw.Record.Name)
		}
		if err := readMany(ctx, b.getMany, names, cur); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// swapTx applies one swap to the record cur inside b's transaction, giving
// the record version v. An error that wraps a contract sentinel means the
// swap was refused and nothing of it was written; any other error is a
// database failure that must abort the transaction.
func (s *Store) swapTx(ctx context.Context, b *bound, cur store.Record, sw store.Swap, v int64) (store.Record, error) {
	if err := storedriver.CheckSwap(cur, sw); err != nil {
		return store.Record{}, err
	}
	if err := checkToken(fmt.Sprintf("election %q", sw.Record.Name), sw.Record.Token); err != nil {
		return store.Record{}, err
	}
	rec := sw.Record
	rec.Version = v
	rec.Updated = s.now()
	_, err := b.upsert.ExecContext(ctx,
		rec.Name, rec.Holder, rec.Incarnation, int64(rec.Token), int64(rec.Lease), rec.Transfer, rec.Version, rec.Updated.UnixNano(), rec.Session)
	if err != nil {
		return store.Record{}, err
	}
	if sw.Event == "" {
		return rec, nil
	}
	ev := storedriver.NextEvent(0, rec, sw.Event) // the statement takes the name's next sequence number
	_, err = b.logEvent.ExecContext(ctx,
		ev.Name, string(ev.Kind), ev.Holder, ev.Incarnation, int64(ev.Token), ev.Transfer, ev.Time.UnixNano())
	if err != nil {
		return store.Record{}, err
	}
	return rec, nil
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	const op = "history"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if after >= math.MaxInt64 {
		return nil, nil // sequence numbers are stored as signed 64-bit
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT seq, kind, holder, incarnation, token, transfer, time_ns, `+s.detailCol()+`
		   FROM baton_election_log WHERE name = ? AND seq > ? ORDER BY seq LIMIT ?`,
		name, int64(after), limit)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var seq, token int64
		var kind string
		ev := store.Event{Name: name}
		if err := rows.Scan(&seq, &kind, &ev.Holder, &ev.Incarnation, &token, &ev.Transfer, nsScanner{&ev.Time}, &ev.Detail); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		ev.Seq, ev.Kind, ev.Token = uint64(seq), store.EventKind(kind), uint64(token)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return errors.Join(store.ErrInvalid, errors.New("sqlite: a candidate needs a name and a node"))
	}
	return s.write(ctx, "heartbeat", func(tx *sql.Tx) error {
		if c.Gone {
			_, err := tx.ExecContext(ctx, `DELETE FROM baton_candidates WHERE name = ? AND node = ?`, c.Name, c.Node)
			return err
		}
		now := s.now().UnixNano()
		_, err := tx.ExecContext(ctx,
			`INSERT INTO baton_candidates (name, node, incarnation, every_ns, since_ns, seen_ns) VALUES (?, ?, ?, ?, ?, ?)
			 ON CONFLICT (name, node) DO UPDATE SET
			   since_ns = CASE WHEN incarnation = excluded.incarnation THEN since_ns ELSE excluded.since_ns END,
			   incarnation = excluded.incarnation, every_ns = excluded.every_ns, seen_ns = excluded.seen_ns`,
			c.Name, c.Node, c.Incarnation, int64(c.Every), now, now)
		return err
	})
}

// Candidates implements store.Store. Age is measured on this host's clock,
// the one the rows were written with (SQLite serves one host).
func (s *Store) Candidates(ctx context.Context, name string) ([]store.Candidate, error) {
	const op = "candidates"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if s.schema < 2 {
		return nil, nil // a version 1 store, read-only: no candidates table
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT node, incarnation, every_ns, since_ns, seen_ns FROM baton_candidates WHERE name = ? ORDER BY node`, name)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	now := s.now()
	var out []store.Candidate
	for rows.Next() {
		c := store.Candidate{Name: name}
		var every int64
		if err := rows.Scan(&c.Node, &c.Incarnation, &every, nsScanner{&c.Since}, nsScanner{&c.Seen}); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		c.Every, c.Age = time.Duration(every), now.Sub(c.Seen)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return out, nil
}
