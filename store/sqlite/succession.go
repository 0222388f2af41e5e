package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var _ store.Succeeder = (*Store)(nil)

// Successions (schema 7; docs/succession.md). A dead session record may
// name a successor (the successor, successor_holder and
// successor_incarnation columns); a name's record that points at it reads
// as held through the successor (store.Resolve). The store resolves in
// Go, and settles on write:
//
//   - a read (Get, GetMany, HeldThrough, History, CountHolders) reads the
//     rows, then, in the same read transaction, the distinct session
//     records they point at, one IN query a hop of the chains (chain),
//     and resolves each row with store.Resolve: names held through one
//     session cost one row more;
//   - every statement that writes a name or compares the ledger with a
//     name's token does not act on a stored record whose session is dead
//     with a successor: the fast paths (renewStmt, takeStmt) have the
//     condition notPassedOnElection in their WHERE and leave such a name to the
//     general path, which settles it in the same transaction (rewrites
//     it resolved, Via empty, its version the resolved one, and appends
//     the succession's log events) before it decides the write against
//     the resolved record; the others (swapRows, UpdateJob, SuspendJob)
//     settle in Go, the fenced ledger writes compare the resolved token.
//
// A name no succession passed on costs the fast paths one probe of the
// primary key (its session's row, a page already in the cache).

// notPassedOnElection is the condition, on the row of baton_election
// that a statement writes, that its stored session is not a dead session
// record with a successor: the one every fast statement that writes a
// name (renewStmt, takeStmt) has in its WHERE.
const notPassedOnElection = `(baton_election.session = '' OR NOT EXISTS (SELECT 1 FROM baton_election s
		WHERE s.name = baton_election.session AND s.holder = '' AND s.successor <> ''))`

// checkRow refuses a stored record whose successor columns no write of
// this package makes (storedriver.SuccessorFault).
func checkRow(rec store.Record) error {
	if f := storedriver.SuccessorFault(rec); f != "" {
		return fmt.Errorf("%w: election record %q has %s", store.ErrCorrupt, rec.Name, f)
	}
	return nil
}

// chain holds the session records that resolutions read, by name: every
// one asked for, found (Version above 0) or not.
type chain map[string]store.Record

// load reads, with getMany (bound to the caller's transaction), the
// session records names and the successors of those that are dead, hop
// by hop: one query a hop, each for the names not read yet. It stops
// after store.MaxSuccession + 1 hops: enough for store.Resolve to refuse
// a longer chain, or a cycle.
func (c chain) load(ctx context.Context, getMany *sql.Stmt, names []string) error {
	found := make(map[string]store.Record)
	for hop := 0; hop <= store.MaxSuccession && len(names) > 0; hop++ {
		var ask []string
		for _, n := range names {
			if _, ok := c[n]; !ok {
				c[n] = store.Record{}
				ask = append(ask, n)
			}
		}
		if len(ask) == 0 {
			return nil
		}
		clear(found)
		if err := readMany(ctx, getMany, ask, found); err != nil {
			return err
		}
		names = names[:0:0]
		for _, r := range found {
			c[r.Name] = r
			if r.Free() && r.Successor != "" {
				names = append(names, r.Successor)
			}
		}
	}
	return nil
}

// session is store.Resolve's view of c.
func (c chain) session(name string) (store.Record, bool) {
	r := c[name]
	return r, r.Version != 0
}

// pointsAt returns the session a stored record's resolution starts at,
// and false when there is none to read (a free record, or one held
// directly).
func pointsAt(r store.Record) (string, bool) {
	return r.Session, r.Session != "" && !r.Free()
}

// resolveRecs resolves recs in place, reading the session records they
// point at with getMany (bound to the read's transaction).
func resolveRecs(ctx context.Context, getMany *sql.Stmt, recs []store.Record) error {
	var sessions []string
	for _, r := range recs {
		if n, ok := pointsAt(r); ok {
			sessions = append(sessions, n)
		}
	}
	if len(sessions) == 0 {
		return nil
	}
	c := chain{}
	if err := c.load(ctx, getMany, sessions); err != nil {
		return err
	}
	for i := range recs {
		r, err := store.Resolve(recs[i], c.session, nil)
		if err != nil {
			return err
		}
		recs[i] = r
	}
	return nil
}

// settled returns the record raw stands for in the form a write stores
// it (store.Resolve, Via empty), given the session records, and the log
// events of the successions it passed, numbered from seq + 1 (seq: the
// name's newest stored event): what the name's next write appends before
// its own, and what History shows until then. The events are those
// memstore's settle appends.
func settled(raw store.Record, session func(string) (store.Record, bool), seq uint64) (store.Record, []store.Event, error) {
	var evs []store.Event
	rec, err := store.Resolve(raw, session, func(now, dead store.Record) {
		seq++
		evs = append(evs, storedriver.SuccessionEvent(seq, now, dead))
	})
	rec.Via = ""
	return rec, evs, err
}

// read runs fn in one read transaction (BEGIN DEFERRED: one snapshot of
// the file, no lock) and classifies its error as the store's reads do.
func (s *Store) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.fail(ctx, op, err)
	}
	err = fn(tx)
	tx.Rollback() // nothing written
	switch {
	case err == nil:
		return nil
	case decided(err):
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return s.fail(ctx, op, err)
}

// heldThroughQuery selects the stored records held through the session
// ?1, with names after ?2, at most ?3 of them: a range of the session
// index (baton_election_session).
func (s *Store) heldThroughQuery() string {
	return `SELECT name, ` + recordCols + s.sessionCol() + `, ` + s.successorCols() + `
		FROM baton_election WHERE ` + s.sessionCol() + ` = ?1 AND name > ?2 ORDER BY name LIMIT ?3`
}

// referencedQuery says whether a stored record points at the session
// record ?1: a name's, held through it (one entry of the session index),
// or another dead session's, as its successor (a range of the session
// records, as sessionsStmt reads).
const referencedQuery = `SELECT EXISTS (SELECT 1 FROM baton_election WHERE session = ?1)
	OR EXISTS (SELECT 1 FROM baton_election WHERE name >= '` + store.SessionPrefix + `' AND name < '` + sessionPrefixEnd + `' AND successor = ?1)`

// successorsQuery selects the dead session records that name a
// successor: a range of the primary key (the session records are few,
// since the collector deletes the dead ones), the successor column read
// from the rows.
const successorsQuery = `SELECT name, successor FROM baton_election
	WHERE name >= '` + store.SessionPrefix + `' AND name < '` + sessionPrefixEnd + `' AND successor <> ''`

// chainInto returns session and the dead session records whose chain of
// successors reaches it (storedriver.ChainInto), from the range of the
// session records.
func chainInto(ctx context.Context, tx *sql.Tx, session string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, successorsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	successors := map[string]string{}
	for rows.Next() {
		var name, successor string
		if err := rows.Scan(&name, &successor); err != nil {
			return nil, err
		}
		successors[name] = successor
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return storedriver.ChainInto(session, successors), nil
}

// HeldThrough implements store.Succeeder: the sessions whose chain
// reaches session, then one range read of the session index for each,
// merged in name order, then their chains, in one read transaction.
func (s *Store) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	const op = "held through"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var out []store.Record
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		out = out[:0]
		sessions := []string{session}
		if s.schema >= 7 {
			var err error
			if sessions, err = chainInto(ctx, tx, session); err != nil {
				return err
			}
		}
		for _, sess := range sessions {
			rows, err := tx.QueryContext(ctx, s.heldThroughQuery(), sess, after, limit)
			if err != nil {
				return err
			}
			for rows.Next() {
				rec, err := recordOf(rows)
				if err != nil {
					rows.Close()
					return err
				}
				out = append(out, rec)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if len(sessions) > 1 {
			slices.SortFunc(out, func(a, b store.Record) int { return strings.Compare(a.Name, b.Name) })
			if limit > 0 && len(out) > limit {
				out = out[:limit]
			}
		}
		getMany := tx.StmtContext(ctx, s.st.getMany)
		defer getMany.Close()
		return resolveRecs(ctx, getMany, out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Settle implements store.Succeeder: up to limit names, in one write
// transaction. Each is rewritten at its resolved version, with its
// changed column as it was: nothing a reader or a watcher acts on
// changes, and the store's counter does not move.
func (s *Store) Settle(ctx context.Context, session string, limit int) (int, error) {
	n := 0
	err := s.write(ctx, "settle", func(tx *sql.Tx) error {
		b := s.bind(ctx, tx)
		defer b.close()
		dead, found, err := getRecordWith(ctx, b.stmt(s.st.get), session)
		if err != nil || !found || !store.IsSession(session) || !dead.Free() || dead.Successor == "" {
			return err
		}
		if limit <= 0 {
			limit = -1 // SQLite: no limit
		}
		rows, err := tx.QueryContext(ctx, `SELECT name FROM baton_election WHERE session = ?1 ORDER BY name LIMIT ?2`, session, limit)
		if err != nil {
			return err
		}
		names, err := scanNames(rows)
		if err != nil {
			return err
		}
		swaps := make([]store.Swap, 0, len(names))
		for _, name := range names {
			if !store.IsSession(name) {
				swaps = append(swaps, store.Swap{Record: store.Record{Name: name}})
			}
		}
		cur, seqs, err := s.current(ctx, b, swaps)
		if err != nil {
			return err
		}
		c := chain{}
		if err := c.load(ctx, b.stmt(s.st.getMany), []string{session}); err != nil {
			return err
		}
		var recs []row
		var evs []store.Event
		for _, sw := range swaps {
			r := cur[sw.Record.Name]
			rec, implied, err := settled(r.Record, c.session, seqs[r.Name])
			if err != nil {
				return err
			}
			seqs[r.Name] += uint64(len(implied))
			recs = append(recs, row{Record: rec, changed: r.changed})
			evs = append(evs, implied...)
		}
		n = len(recs)
		return s.writeRecords(b, recs, seqs, evs)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// settleName settles the election record of name in b's transaction, if
// a succession passed it on, and returns it as the store now holds it
// (found false: there is none): what a write of the name that is not a
// swap (UpdateJob, SuspendJob) reads first.
func (s *Store) settleName(ctx context.Context, b *bound, name string) (store.Record, bool, error) {
	cur, seqs, err := s.current(ctx, b, []store.Swap{{Record: store.Record{Name: name}}})
	if err != nil {
		return store.Record{}, false, err
	}
	r, found := cur[name]
	at, ok := pointsAt(r.Record)
	if !found || !ok {
		return r.Record, found, nil
	}
	c := chain{}
	if err := c.load(ctx, b.stmt(s.st.getMany), []string{at}); err != nil {
		return store.Record{}, false, err
	}
	rec, implied, err := settled(r.Record, c.session, seqs[name])
	if err != nil || len(implied) == 0 {
		return rec, true, err
	}
	seqs[name] += uint64(len(implied))
	return rec, true, s.writeRecords(b, []row{{Record: rec, changed: r.changed}}, seqs, implied)
}

// resolvedToken returns the resolved token of the election record name
// in tx (0: none): what a fenced ledger write is compared with.
func (s *Store) resolvedToken(ctx context.Context, tx *sql.Tx, name string) (uint64, error) {
	rec, found, err := s.getRecord(ctx, tx, name)
	if err != nil || !found {
		return 0, err
	}
	getMany := tx.StmtContext(ctx, s.st.getMany)
	defer getMany.Close()
	recs := []store.Record{rec}
	if err := resolveRecs(ctx, getMany, recs); err != nil {
		return 0, err
	}
	return recs[0].Token, nil
}
