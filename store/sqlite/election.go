package sqlite

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// recordCols are the election record's columns as recordOf scans them,
// after the name and before the session and successor columns
// (sessionCol, successorCols).
const recordCols = `holder, incarnation, token, lease_ns, transfer, version, updated_ns, `

// recordOf scans one row of name and recordCols, plus the session and
// successor columns, as stored (unresolved); a row whose successor
// columns no write of baton makes is an error wrapping store.ErrCorrupt
// (checkRow).
func recordOf(row interface{ Scan(...any) error }) (store.Record, error) {
	var rec store.Record
	var token, lease int64
	err := row.Scan(&rec.Name, &rec.Holder, &rec.Incarnation, &token, &lease, &rec.Transfer, &rec.Version, nsScanner{&rec.Updated}, &rec.Session,
		nullText{&rec.Successor}, nullText{&rec.SuccessorHolder}, nullText{&rec.SuccessorIncarnation})
	rec.Token, rec.Lease = uint64(token), time.Duration(lease)
	if err == nil {
		err = checkRow(rec)
	}
	return rec, err
}

// getRecord reads the election record of name as stored (unresolved),
// inside tx or, with a nil tx, on its own; a missing record is the zero
// Record (Version 0) and found false.
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

// Get implements store.Store: the record and the session records it
// passes (see chain), in one read transaction.
func (s *Store) Get(ctx context.Context, name string) (store.Record, error) {
	const op = "get"
	if err := s.enter(ctx, op); err != nil {
		return store.Record{}, err
	}
	var rec store.Record
	var found bool
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		var err error
		if rec, found, err = s.getRecord(ctx, tx, name); err != nil || !found {
			return err
		}
		if _, ok := pointsAt(rec); !ok {
			return nil
		}
		getMany := tx.StmtContext(ctx, s.st.getMany)
		defer getMany.Close()
		recs := []store.Record{rec}
		err = resolveRecs(ctx, getMany, recs)
		rec = recs[0]
		return err
	})
	if err != nil {
		return store.Record{}, err
	}
	if !found {
		return store.Record{}, fmt.Errorf("sqlite: election %q: %w", name, store.ErrNotFound)
	}
	return rec, nil
}

// GetManyChunk is how many names GetMany reads with one query.
const GetManyChunk = 1000

// GetMany implements store.Store: one query per GetManyChunk names, and
// one a hop of the chains of the session records they pass (see chain),
// each chunk a read transaction of its own (the names of one chunk are
// read in one snapshot, the chunks one after another).
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	const op = "get many"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	res := make([]store.GetResult, len(names))
	found := make(map[string]store.Record, min(len(names), GetManyChunk))
	var recs []store.Record
	for lo := 0; lo < len(names); lo += GetManyChunk {
		chunk := names[lo:min(lo+GetManyChunk, len(names))]
		clear(found)
		err := s.read(ctx, op, func(tx *sql.Tx) error {
			getMany := tx.StmtContext(ctx, s.st.getMany)
			defer getMany.Close()
			if err := readMany(ctx, getMany, chunk, found); err != nil {
				return err
			}
			recs = recs[:0]
			for _, r := range found {
				if _, ok := pointsAt(r); ok {
					recs = append(recs, r)
				}
			}
			if err := resolveRecs(ctx, getMany, recs); err != nil {
				return err
			}
			for _, r := range recs {
				found[r.Name] = r
			}
			return nil
		})
		if err != nil {
			return nil, err
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

// readMany reads the records of names with getMany into found, as stored.
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
// respect to every other connection to the file, in any process. A swap
// that may be a renewal (no event, a held record, a name's or a
// session's, an expected version, no successor) is tried first as the renewal's one-row
// UPDATE (renewStmt, see renew); when it matches no row, the swap goes the
// general way. Either way a swap waits for the Store's write turn ahead of
// queued batched writes (see turn).
func (s *Store) Swap(ctx context.Context, sw store.Swap) (store.Record, error) {
	if sw.Event == "" && sw.Expect != 0 && sw.Record.Holder != "" && sw.Record.Successor == "" && !s.readOnly {
		rec, ok, err := s.renew(ctx, sw)
		if err != nil || ok {
			return rec, err
		}
	}
	var res []store.SwapResult
	err := s.writeTurn(ctx, "swap", true, func(tx *sql.Tx) error {
		b := s.bind(ctx, tx)
		defer b.close()
		var err error
		res, err = s.swapTx(ctx, b, []store.Swap{sw})
		return err
	})
	if err != nil {
		return store.Record{}, err
	}
	return res[0].Record, res[0].Err
}

// renew applies sw if it renews the record as stored (storedriver.Renews,
// or storedriver.RenewsSession for a session record):
// one statement, renewStmt, in a transaction of its own (autocommit), on
// the writer connection, under the Store's write turn (s.writing) as every
// write. ok is false, and nothing was written, when no record matched.
// The rows are read to the end, so that an error of the commit, which
// ends the statement, is seen.
func (s *Store) renew(ctx context.Context, sw store.Swap) (rec store.Record, ok bool, err error) {
	const op = "swap"
	if err := s.enter(ctx, op); err != nil {
		return store.Record{}, false, err
	}
	done, err := s.takeTurn(ctx, true)
	if err != nil {
		return store.Record{}, false, s.fail(ctx, op, err)
	}
	defer done()
	st := s.st.renew
	if s.writer.Load() != nil {
		st = s.writerRenew
	}
	r := sw.Record
	updated := s.now()
	rows, err := st.QueryContext(ctx, updated.UnixNano(), r.Name, sw.Expect, r.Holder, r.Incarnation,
		int64(r.Token), int64(r.Lease), r.Transfer, r.Session, s.id)
	if errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return store.Record{}, false, nil // the general way gives the writer up (see begin)
	}
	if err != nil {
		return store.Record{}, false, s.fail(ctx, op, err)
	}
	for rows.Next() {
		if err := rows.Scan(&r.Version); err != nil {
			rows.Close()
			return store.Record{}, false, s.fail(ctx, op, err)
		}
		ok = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Record{}, false, s.fail(ctx, op, err)
	}
	if !ok {
		return store.Record{}, false, nil
	}
	// A write committed to a file the path no longer names counts for
	// nobody (as in write).
	if err := s.checkFile(op); err != nil {
		return store.Record{}, false, err
	}
	r.Updated = updated
	return r, true, nil
}

// SwapMany implements store.Store: all swaps are applied in one
// write transaction (one fsync), in order, each compared with the record as
// left by the swaps before it. A swap refused by the contract (conflict,
// invalid) is reported in its result and does not stop the others.
//
// The transaction reads the records the swaps name and their newest log
// sequence numbers (one query per GetManyChunk names), decides every
// swap in Go, then writes the records and the log events with multi-row
// statements (see blockRows), and the store's counter once: its
// cost grows with the number of swaps, but by far fewer statements than
// two per swap. A batch of takes (a bulk takeover: see takes) is written
// with one statement for its records and one for its log events, and
// reads only the records of the swaps it refuses.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	var res []store.SwapResult
	err := s.write(ctx, "swap many", func(tx *sql.Tx) error {
		b := s.bind(ctx, tx)
		defer b.close()
		var err error
		res, err = s.swapTx(ctx, b, swaps)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// swapTx applies swaps in b's write transaction.
//
// Each record written gets a version above its current one and the
// counter (counterKey); a swap that is not a renewal (storedriver.Renews)
// also sets the record's changed column to that version, for the change
// feed, and raises the counter to it. A renewal leaves both: see
// renewStmt.
func (s *Store) swapTx(ctx context.Context, b *bound, swaps []store.Swap) ([]store.SwapResult, error) {
	var last int64
	if err := b.stmt(s.st.lastVersion).QueryRowContext(ctx).Scan(&last); err != nil {
		return nil, err
	}
	if takes(swaps) {
		res, rest, v, err := s.takeTx(ctx, b, swaps, last)
		if err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			// Refused: the general path says why, against the records
			// as they are (it writes none of them: see takeTx).
			sub := make([]store.Swap, len(rest))
			for j, i := range rest {
				sub[j] = swaps[i]
			}
			got, next, err := s.swapRows(ctx, b, sub, v)
			if err != nil {
				return nil, err
			}
			for j, i := range rest {
				res[i] = got[j]
			}
			v = next
		}
		if v != last {
			if _, err := b.stmt(s.st.setVersion).ExecContext(ctx, v); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	res, next, err := s.swapRows(ctx, b, swaps, last)
	if err != nil {
		return nil, err
	}
	if next != last {
		if _, err := b.stmt(s.st.setVersion).ExecContext(ctx, next); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// swapRows is swapTx's general path, the counter at last: it reads the
// records the swaps name and the session records their resolutions pass
// (see chain), decides each swap in Go against the resolved record
// (storedriver.CheckSuccessionSwap) and writes the records and log events
// with multi-row statements: a name that a succession passed on is
// written settled, its succession's events before the swap's own. It
// returns the counter's new value, which the caller writes.
func (s *Store) swapRows(ctx context.Context, b *bound, swaps []store.Swap, last int64) ([]store.SwapResult, int64, error) {
	res := make([]store.SwapResult, len(swaps))
	cur, seqs, err := s.current(ctx, b, swaps)
	if err != nil {
		return nil, 0, err
	}
	// The session records the swaps may pass: those the stored records
	// and the new ones point at, and the successors they name. A record
	// the batch wrote (cur) is read as the batch left it.
	var sessions []string
	for _, sw := range swaps {
		if n, ok := pointsAt(cur[sw.Record.Name].Record); ok {
			sessions = append(sessions, n)
		}
		if n, ok := pointsAt(sw.Record); ok {
			sessions = append(sessions, n)
		}
		if sw.Record.Successor != "" {
			sessions = append(sessions, sw.Record.Successor)
		}
	}
	ch := chain{}
	if len(sessions) > 0 {
		if err := ch.load(ctx, b.stmt(s.st.getMany), sessions); err != nil {
			return nil, 0, err
		}
	}
	session := func(name string) (store.Record, bool) {
		if r, ok := cur[name]; ok {
			return r.Record, true
		}
		return ch.session(name)
	}
	// The records to write, each name's last one, in the order of
	// their first swap; and the log events, in the order of theirs.
	var recs []row
	at := make(map[string]int, len(swaps))
	var evs []store.Event
	next := last
	for i, sw := range swaps {
		name := sw.Record.Name
		c := cur[name]
		resolved, implied, err := settled(c.Record, session, seqs[name])
		if err == nil {
			sw.Record.Via = ""
			var rec store.Record
			if rec, err = s.decide(resolved, sw, max(next, resolved.Version)+1, session); err == nil {
				if !storedriver.Renews(resolved, sw) {
					next, c.changed = rec.Version, rec.Version
				}
				c.Record = rec
			}
		}
		if err != nil {
			if !decided(err) {
				return nil, 0, err
			}
			res[i].Err = err
			continue
		}
		cur[name] = c
		res[i].Record = c.Record
		if j, ok := at[name]; ok {
			recs[j] = c
		} else {
			at[name] = len(recs)
			recs = append(recs, c)
		}
		seqs[name] += uint64(len(implied))
		evs = append(evs, implied...)
		if sw.Event != "" {
			seqs[name]++
			evs = append(evs, storedriver.NextEvent(seqs[name], c.Record, sw.Event))
		}
	}
	if len(recs) == 0 {
		return res, last, nil
	}
	if err := s.writeRecords(b, recs, seqs, evs); err != nil {
		return nil, 0, err
	}
	return res, next, nil
}

// writeRecords writes recs, each with log_seq its name's newest sequence
// number after the batch (seqs holds every name of recs), and appends
// evs, with multi-row statements bound to b.
func (s *Store) writeRecords(b *bound, recs []row, seqs map[string]uint64, evs []store.Event) error {
	if err := writeRows(b, &s.st.upsert, &s.st.wanted, len(recs), func(args []any, i int) []any {
		r := &recs[i]
		return append(args, r.Name, r.Holder, r.Incarnation, int64(r.Token), int64(r.Lease), r.Transfer, r.Version, r.Updated.UnixNano(), r.Session, r.changed, int64(seqs[r.Name]),
			r.Successor, r.SuccessorHolder, r.SuccessorIncarnation)
	}); err != nil {
		return err
	}
	return writeRows(b, &s.st.logEvent, &s.st.wanted, len(evs), func(args []any, i int) []any {
		e := &evs[i]
		return append(args, e.Name, int64(e.Seq), string(e.Kind), e.Holder, e.Incarnation, int64(e.Token), e.Transfer, e.Time.UnixNano(), e.Detail)
	})
}

// row is an election record as stored: with its changed column, the
// counter's value at its last write other than a renewal.
type row struct {
	store.Record
	changed int64
}

// current reads, inside b's transaction, the records the swaps name and
// the newest log sequence number (0 for none) of each name: one query per
// GetManyChunk swaps. A name without a record is missing from recs.
func (s *Store) current(ctx context.Context, b *bound, swaps []store.Swap) (recs map[string]row, seqs map[string]uint64, err error) {
	recs = make(map[string]row, len(swaps))
	seqs = make(map[string]uint64, len(swaps))
	names := make([]string, 0, min(len(swaps), GetManyChunk))
	for lo := 0; lo < len(swaps); lo += GetManyChunk {
		names = names[:0]
		for _, sw := range swaps[lo:min(lo+GetManyChunk, len(swaps))] {
			names = append(names, sw.Record.Name)
		}
		if err := readCurrent(ctx, b.stmt(s.st.current), names, recs, seqs); err != nil {
			return nil, nil, err
		}
	}
	return recs, seqs, nil
}

// readCurrent runs the statement current for names.
func readCurrent(ctx context.Context, current *sql.Stmt, names []string, recs map[string]row, seqs map[string]uint64) error {
	arg, err := json.Marshal(names)
	if err != nil {
		return err
	}
	rows, err := current.QueryContext(ctx, string(arg))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r row
		var token, lease, seq int64
		if err := rows.Scan(&r.Name, &r.Holder, &r.Incarnation, &token, &lease, &r.Transfer, &r.Version, nsScanner{&r.Updated}, &r.Session, &r.changed, &seq,
			nullText{&r.Successor}, nullText{&r.SuccessorHolder}, nullText{&r.SuccessorIncarnation}); err != nil {
			return err
		}
		r.Token, r.Lease = uint64(token), time.Duration(lease)
		if err := checkRow(r.Record); err != nil {
			return err
		}
		if r.Version != 0 {
			recs[r.Name] = r
		}
		seqs[r.Name] = uint64(seq)
	}
	return rows.Err()
}

// decide checks one swap against the record cur, as resolved, and
// returns the record it writes, at version v; an error wraps a contract
// sentinel: the swap is refused. session reads the stored session
// records: the new record's resolved token, and the successor it names.
func (s *Store) decide(cur store.Record, sw store.Swap, v int64, session func(string) (store.Record, bool)) (store.Record, error) {
	next, err := store.Resolve(sw.Record, session, nil)
	if err != nil {
		return store.Record{}, err
	}
	var successor store.Record
	var ok bool
	if sw.Record.Successor != "" {
		successor, ok = session(sw.Record.Successor)
	}
	if err := storedriver.CheckSuccessionSwap(cur, sw, next.Token, successor, ok); err != nil {
		return store.Record{}, err
	}
	rec := storedriver.WithSuccessor(sw.Record, cur, successor)
	rec.Version = v
	rec.Updated = s.now()
	return rec, nil
}

// writeRows writes n rows with the multi-row statements kinds (statement
// k writes 1<<k rows) in b's transaction: blockRows rows at a time, then
// the rest in one statement per binary digit of its size. args appends
// the parameters of row i. wanted is the Store's flag for statements run
// unprepared (rowStmts.exec).
func writeRows(b *bound, kinds *rowStmts, wanted *atomic.Bool, n int, args func(args []any, i int) []any) error {
	var buf []any
	for i := 0; i < n; {
		k := blockKinds - 1
		for 1<<k > n-i {
			k--
		}
		buf = buf[:0]
		for j := i; j < i+1<<k; j++ {
			buf = args(buf, j)
		}
		if err := kinds.exec(b, wanted, k, buf); err != nil {
			return err
		}
		i += 1 << k
	}
	return nil
}

// History implements store.Store. The log and, for a name a succession
// passed on that was not written since, the succession's events (not
// stored yet: see settled) are read in one read transaction.
func (s *Store) History(ctx context.Context, name string, after uint64, limit int) ([]store.Event, error) {
	const op = "history"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if after >= math.MaxInt64 {
		return nil, nil // sequence numbers are stored as signed 64-bit
	}
	sqlLimit := limit
	if limit <= 0 {
		sqlLimit = -1 // SQLite: no limit
	}
	var out []store.Event
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx,
			`SELECT seq, kind, holder, incarnation, token, transfer, time_ns, `+s.detailCol()+`
			   FROM baton_election_log WHERE name = ? AND seq > ? ORDER BY seq LIMIT ?`,
			name, int64(after), sqlLimit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq, token int64
			var kind string
			ev := store.Event{Name: name}
			if err := rows.Scan(&seq, &kind, &ev.Holder, &ev.Incarnation, &token, &ev.Transfer, nsScanner{&ev.Time}, &ev.Detail); err != nil {
				return err
			}
			ev.Seq, ev.Kind, ev.Token = uint64(seq), store.EventKind(kind), uint64(token)
			out = append(out, ev)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if s.schema < 7 || (limit > 0 && len(out) >= limit) {
			return nil // no successions before version 7 (read-only)
		}
		implied, err := s.implied(ctx, tx, name)
		for _, ev := range implied {
			if ev.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, ev)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// implied returns, in tx, the log events of the successions that passed
// on the election record of name since its last write, numbered after
// its stored log (none: nil).
func (s *Store) implied(ctx context.Context, tx *sql.Tx, name string) ([]store.Event, error) {
	var seq int64
	row := tx.QueryRowContext(ctx, `SELECT name, `+recordCols+`session, `+s.successorCols()+`, log_seq FROM baton_election WHERE name = ?`, name)
	raw, err := recordOf(scanFunc(func(dest ...any) error { return row.Scan(append(dest, &seq)...) }))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	at, ok := pointsAt(raw)
	if err != nil || !ok {
		return nil, err
	}
	getMany := tx.StmtContext(ctx, s.st.getMany)
	defer getMany.Close()
	c := chain{}
	if err := c.load(ctx, getMany, []string{at}); err != nil {
		return nil, err
	}
	_, evs, err := settled(raw, c.session, uint64(seq))
	return evs, err
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, c store.Candidate) error {
	if c.Name == "" || c.Node == "" {
		return errors.Join(store.ErrInvalid, errors.New("sqlite: a candidate needs a name and a node"))
	}
	if err := store.CheckAttrs(c.Attrs); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return s.write(ctx, "heartbeat", func(tx *sql.Tx) error {
		if c.Gone {
			_, err := tx.ExecContext(ctx, `DELETE FROM baton_candidates WHERE name = ? AND node = ?`, c.Name, c.Node)
			return err
		}
		now := s.now().UnixNano()
		_, err := tx.ExecContext(ctx,
			`INSERT INTO baton_candidates (name, node, incarnation, every_ns, since_ns, seen_ns, attrs) VALUES (?, ?, ?, ?, ?, ?, ?)
			 ON CONFLICT (name, node) DO UPDATE SET
			   since_ns = CASE WHEN incarnation = excluded.incarnation THEN since_ns ELSE excluded.since_ns END,
			   incarnation = excluded.incarnation, every_ns = excluded.every_ns, seen_ns = excluded.seen_ns, attrs = excluded.attrs`,
			c.Name, c.Node, c.Incarnation, int64(c.Every), now, now, c.Attrs)
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
	attrs := "attrs"
	if s.schema < 8 {
		attrs = "''" // read-only: no attributes before version 8
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT node, incarnation, every_ns, since_ns, seen_ns, `+attrs+` FROM baton_candidates WHERE name = ? ORDER BY node`, name)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	now := s.now()
	var out []store.Candidate
	for rows.Next() {
		c := store.Candidate{Name: name}
		var every int64
		if err := rows.Scan(&c.Node, &c.Incarnation, &every, nsScanner{&c.Since}, nsScanner{&c.Seen}, &c.Attrs); err != nil {
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
