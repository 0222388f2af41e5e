package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var _ store.Succeeder = (*Store)(nil)

// How successions work here (docs/succession.md, "Stores").
//
// Reads resolve in Go, with store.Resolve, inside the read's snapshot:
// the records, then the session records they name (in the same
// statement: when no succession passed a record on, that is all Resolve
// asks for), then, only when Resolve asks for more, the next session
// records of the chains, one query a hop, in a REPEATABLE READ
// transaction that reads the records again (chain).
//
// Writes settle: a write whose record, as stored or as written, names a
// session that a succession passed on (passedSQL), or that writes a dead
// session record with a successor, is not decided by the fast statements
// (the renewals, swap_one, swap_many), which refuse it, writing nothing
// (errSuccession); Go then decides it in one transaction (swapInTx): it
// locks the record, rewrites it in its resolved form with its version
// the resolved version and appends the succession's log events (settle),
// and decides the swap with storedriver.CheckSuccessionSwap against that
// record. A batch of names settles first, all at once, and then runs
// swap_many in the same transaction.
//
// Ordering. Versions come from a sequence, and two transactions may
// commit in the other order than they drew. A succession changes the
// resolved version of every name it passes on only if it draws its
// version after every write of those names that committed before it. So
// every write of a name held through a session S (as stored or as
// written) takes S's row FOR KEY SHARE (passedSQL, chain with locks),
// and the succession write takes S FOR UPDATE (swapInTx): whichever
// comes second waits for the first to commit and draws its version after
// it; a name's write that waited finds S passed on and settles.
// FOR KEY SHARE does not wait for, nor hold up, S's renewals (an UPDATE
// of no key column). TestSuccessionRace races the two.

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// scanRow reads a row of (ord, rowCols).
func scanRow(row pgx.Row) (int64, store.Record, error) {
	var (
		ord          int64
		rec          store.Record
		token, lease int64
	)
	err := row.Scan(&ord, &rec.Name, &rec.Holder, &rec.Incarnation, &token, &lease, &rec.Transfer, &rec.Session,
		&rec.Version, &rec.Updated, &rec.Successor, &rec.SuccessorHolder, &rec.SuccessorIncarnation)
	if err != nil {
		return 0, store.Record{}, err
	}
	rec.Token, rec.Lease, rec.Updated = uint64(token), time.Duration(lease), rec.Updated.UTC()
	return ord, rec, nil
}

// checkRow returns the error of a row that no baton wrote, which the
// schema's constraints refuse (see successionDDL; storedriver.SuccessorFault).
func (s *Store) checkRow(op string, r store.Record) error {
	f := storedriver.SuccessorFault(r)
	if f == "" {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w: schema %q: record %q has %s, which baton never writes (its tables were changed by another program)",
		op, store.ErrCorrupt, s.schema, r.Name, f)
}

// chain is store.Resolve's view of the stored session records: those
// read so far, by name, and the names Resolve asked for that were not
// read yet (need), which fetch reads, one query a hop.
type chain struct {
	s      *Store
	op     string
	q      querier
	fetchQ string // statement reading session records by name
	known  map[string]store.Record
	asked  map[string]bool // names read or being read (found or not)
	need   []string
}

func (s *Store) newChain(op string, q querier, locked bool) *chain {
	c := &chain{s: s, op: op, q: q, fetchQ: s.sql.sessions, known: map[string]store.Record{}, asked: map[string]bool{}}
	if locked {
		c.fetchQ = s.sql.sessionsLocked
	}
	return c
}

// add records a session record read, or the name of one found missing.
func (c *chain) add(name string, rec store.Record, found bool) {
	c.asked[name] = true
	if found {
		c.known[name] = rec
	}
}

func (c *chain) lookup(name string) (store.Record, bool) {
	if r, ok := c.known[name]; ok {
		return r, true
	}
	if !c.asked[name] {
		c.asked[name] = true
		c.need = append(c.need, name)
	}
	return store.Record{}, false
}

// fetch reads the session records Resolve asked for.
func (c *chain) fetch(ctx context.Context) error {
	names := c.need
	c.need = nil
	slices.Sort(names)
	rows, err := c.q.Query(ctx, c.fetchQ, names)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		_, rec, err := scanRow(rows)
		if err != nil {
			return err
		}
		if err := c.s.checkRow(c.op, rec); err != nil {
			return err
		}
		c.known[rec.Name] = rec
	}
	return rows.Err()
}

// resolved is a record as stored, resolved (store.Resolve), with the log
// events of the successions that passed it on (numbered from 1: their
// place after the stored log).
type resolved struct {
	rec    store.Record
	events []store.Event
}

// resolve resolves raws with the session records read so far, a pass
// over all; after it, c.need lists the session records Resolve asked for
// that were not read, and the results of the records that asked are not
// final.
func (c *chain) resolvePass(raws []store.Record, withEvents bool) ([]resolved, error) {
	out := make([]resolved, len(raws))
	for i, raw := range raws {
		var passed func(now, dead store.Record)
		if withEvents {
			passed = func(now, dead store.Record) {
				out[i].events = append(out[i].events, storedriver.SuccessionEvent(uint64(len(out[i].events))+1, now, dead))
			}
		}
		rec, err := store.Resolve(raw, c.lookup, passed)
		if err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", c.op, err)
		}
		out[i].rec = rec
	}
	return out, nil
}

// resolve resolves raws, reading the session records Resolve asks for, a
// hop per query.
func (c *chain) resolve(ctx context.Context, raws []store.Record, withEvents bool) ([]resolved, error) {
	for {
		out, err := c.resolvePass(raws, withEvents)
		if err != nil || len(c.need) == 0 {
			return out, err
		}
		if err := c.fetch(ctx); err != nil {
			return nil, err
		}
	}
}

// readRows runs a statement of (ord, rowCols) rows: records (ord >= 1)
// and session records (ord 0), which it adds to c. A record's session is
// marked read when sessions says the statement reads them.
func (c *chain) readRows(ctx context.Context, q querier, sql string, sessions bool, args ...any) (ords []int64, raws []store.Record, err error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		ord, rec, err := scanRow(rows)
		if err != nil {
			return nil, nil, err
		}
		if err := c.s.checkRow(c.op, rec); err != nil {
			return nil, nil, err
		}
		if ord == 0 {
			c.add(rec.Name, rec, true)
			continue
		}
		ords, raws = append(ords, ord), append(raws, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if sessions {
		for _, r := range raws {
			if r.Session != "" && !c.asked[r.Session] {
				c.add(r.Session, store.Record{}, false)
			}
		}
	}
	return ords, raws, nil
}

// readResolved runs sql, a statement of records and the session records
// they name (statements.get, getMany), and returns the records resolved,
// with their ords: in one statement when no succession passed a record
// on, else again in a REPEATABLE READ transaction, one more query a hop.
func (s *Store) readResolved(ctx context.Context, op, sql string, args ...any) ([]int64, []resolved, error) {
	c := s.newChain(op, s.pool, false)
	ords, raws, err := c.readRows(ctx, s.pool, sql, true, args...)
	if err != nil {
		return nil, nil, err
	}
	out, err := c.resolvePass(raws, false)
	if err != nil || len(c.need) == 0 {
		return ords, out, err
	}
	// A succession passed a record on: the chain is read in the
	// snapshot of the records.
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		c = s.newChain(op, tx, false)
		if ords, raws, err = c.readRows(ctx, tx, sql, true, args...); err != nil {
			return err
		}
		out, err = c.resolve(ctx, raws, false)
		return err
	})
	return ords, out, err
}

// readTx runs fn in a read-only REPEATABLE READ transaction: one snapshot.
func (s *Store) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// HeldThrough implements store.Succeeder: one range read of the session
// index, and the chain's session records, in one snapshot.
func (s *Store) HeldThrough(ctx context.Context, session, after string, limit int) ([]store.Record, error) {
	const op = "held through"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	if s.version < 3 {
		return nil, nil // a version 1 or 2 schema, read-only: no sessions
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	var out []store.Record
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		c := s.newChain(op, tx, false)
		sessions, err := s.chainInto(ctx, tx, session)
		if err != nil {
			return err
		}
		var raws []store.Record
		for _, sess := range sessions {
			_, page, err := c.readRows(ctx, tx, s.sql.heldThrough, false, sess, after, lim)
			if err != nil {
				return err
			}
			raws = append(raws, page...)
		}
		if len(sessions) > 1 {
			slices.SortFunc(raws, func(a, b store.Record) int { return strings.Compare(a.Name, b.Name) })
			if limit > 0 && len(raws) > limit {
				raws = raws[:limit]
			}
		}
		res, err := c.resolve(ctx, raws, false)
		if err != nil {
			return err
		}
		out = make([]store.Record, len(res))
		for i, r := range res {
			out[i] = r.rec
		}
		return nil
	})
	if err != nil {
		return nil, s.failResolve(ctx, op, err)
	}
	return out, nil
}

// chainInto returns session and the dead session records whose chain of
// successors reaches it, a step back a query (the successor index): a
// tree in a store that follows the rules (each dead session names one
// successor), a handful of sessions at most, since the collector settles
// and deletes the dead ones. A hostile cycle is followed once, and a
// chain no store can resolve (store.MaxSuccession) is not followed
// further: Resolve refuses its names.
func (s *Store) chainInto(ctx context.Context, tx pgx.Tx, session string) ([]string, error) {
	out := []string{session}
	seen := map[string]bool{session: true}
	for step, frontier := 0, out; len(frontier) > 0 && step <= store.MaxSuccession; step++ {
		rows, err := tx.Query(ctx, s.sql.predecessors, frontier)
		if err != nil {
			return nil, err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		frontier = nil
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				frontier = append(frontier, n)
			}
		}
		out = append(out, frontier...)
	}
	return out, nil
}

// failResolve is fail for an error that may be store.Resolve's own
// (ErrInvalid) or a corrupt row's (ErrCorrupt), which pass as they are.
func (s *Store) failResolve(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrCorrupt) {
		return err
	}
	return s.fail(ctx, op, err)
}

// Settle implements store.Succeeder: one transaction for the page, which
// locks the names held through session (an index range, in name order)
// and the chain's session records, and rewrites them resolved.
func (s *Store) Settle(ctx context.Context, session string, limit int) (int, error) {
	const op = "settle"
	if err := s.enter(ctx, op); err != nil {
		return 0, err
	}
	if err := s.writable(op); err != nil {
		return 0, err
	}
	if !store.IsSession(session) {
		return 0, nil
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	var n int
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, op); refused != nil || err != nil {
			return err
		}
		c := s.newChain(op, tx, true)
		c.lookup(session) // asks for it
		if err := c.fetch(ctx); err != nil {
			return err
		}
		if dead, ok := c.known[session]; !ok || !dead.Free() || dead.Successor == "" {
			return nil // nothing to settle
		}
		_, raws, err := c.readRows(ctx, tx, s.sql.settleNames, false, session, lim)
		if err != nil {
			return err
		}
		n = len(raws)
		return s.settle(ctx, tx, c, raws)
	})
	if err != nil {
		return 0, s.failResolve(ctx, op, err)
	}
	if refused != nil {
		return 0, refused
	}
	return n, nil
}

// settle rewrites raws, records locked FOR UPDATE in tx, in their
// resolved form (Via empty, the version the resolved version) and appends
// their succession events: what a write of a name does first when a
// succession passed it on. It returns the records as now stored. Session
// records are left as they are (a session is not held through another).
func (s *Store) settle(ctx context.Context, tx pgx.Tx, c *chain, raws []store.Record) error {
	_, err := s.settled(ctx, tx, c, raws)
	return err
}

func (s *Store) settled(ctx context.Context, tx pgx.Tx, c *chain, raws []store.Record) ([]store.Record, error) {
	out := slices.Clone(raws)
	var todo []store.Record
	var idx []int
	for i, r := range raws {
		if r.Session != "" && !store.IsSession(r.Name) {
			todo, idx = append(todo, r), append(idx, i)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	res, err := c.resolve(ctx, todo, true)
	if err != nil {
		return nil, err
	}
	var (
		names, holders, incs, sessions []string
		tokens, versions               []int64
		updated                        []time.Time
		ev                             struct {
			names, kinds, holders, incs, transfers, details []string
			ks, tokens                                      []int64
			times                                           []time.Time
		}
	)
	for j, r := range res {
		if len(r.events) == 0 {
			continue
		}
		rec := r.rec
		rec.Via = ""
		out[idx[j]] = rec
		names, holders, incs, sessions = append(names, rec.Name), append(holders, rec.Holder), append(incs, rec.Incarnation), append(sessions, rec.Session)
		tokens, versions, updated = append(tokens, int64(rec.Token)), append(versions, rec.Version), append(updated, rec.Updated)
		for _, e := range r.events {
			ev.names, ev.kinds, ev.holders, ev.incs = append(ev.names, rec.Name), append(ev.kinds, string(e.Kind)), append(ev.holders, e.Holder), append(ev.incs, e.Incarnation)
			ev.transfers, ev.details = append(ev.transfers, e.Transfer), append(ev.details, e.Detail)
			ev.ks, ev.tokens, ev.times = append(ev.ks, int64(e.Seq)), append(ev.tokens, int64(e.Token)), append(ev.times, e.Time)
		}
	}
	if len(names) == 0 {
		return out, nil
	}
	if _, err := tx.Exec(ctx, s.sql.settleRows, names, holders, incs, tokens, sessions, versions, updated); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, s.sql.settleLog, ev.names, ev.ks, ev.kinds, ev.holders, ev.incs, ev.tokens, ev.transfers, ev.times, ev.details)
	return out, err
}

// isSuccession reports whether err is a record function's refusal of a
// swap that Go decides (errSuccession).
func isSuccession(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == errSuccession
}

// swapSlow applies swaps in order, in one transaction, each decided in Go
// (swapInTx): a batch that names a successor, or that swap_many left to Go
// after its names were settled.
func (s *Store) swapSlow(ctx context.Context, op string, swaps []store.Swap) ([]store.SwapResult, error) {
	res := make([]store.SwapResult, len(swaps))
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, op); refused != nil || err != nil {
			return err
		}
		for i, sw := range swaps {
			if res[i].Record, res[i].Err, err = s.swapInTx(ctx, tx, op, sw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.failResolve(ctx, op, err)
	}
	if refused != nil {
		return nil, refused
	}
	return res, nil
}

// swapManySettled is SwapMany for a batch that swap_many left to Go: one
// transaction that settles the batch's names (locked in name order) and
// runs swap_many again; if it still leaves a swap to Go (a record written
// through a session passed on, a dead session with a successor), the
// batch is decided in Go (swapSlow).
func (s *Store) swapManySettled(ctx context.Context, op string, swaps []store.Swap) ([]store.SwapResult, error) {
	names := make([]string, 0, len(swaps))
	for _, sw := range swaps {
		names = append(names, sw.Record.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var (
		res     []store.SwapResult
		refused error
		slow    bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if refused, err = s.sameStore(ctx, tx, op); refused != nil || err != nil {
			return err
		}
		c := s.newChain(op, tx, true)
		_, raws, err := c.readRows(ctx, tx, s.sql.lockNames, false, names)
		if err != nil {
			return err
		}
		if err := s.settle(ctx, tx, c, raws); err != nil {
			return err
		}
		res, err = s.swapBatch(ctx, tx, op, swaps)
		if isSuccession(err) {
			slow = true
			return errRollback
		}
		return err
	})
	switch {
	case slow:
		return s.swapSlow(ctx, op, swaps)
	case err != nil:
		return nil, s.failResolve(ctx, op, err)
	case refused != nil:
		return nil, refused
	}
	return res, nil
}

// errRollback ends a transaction function without an error of its own.
var errRollback = errors.New("rolled back")

// swapInTx applies sw in tx, decided in Go: it locks the record (FOR
// UPDATE), settles it (settle), resolves the record written, locks the
// successor it names (FOR SHARE: held until the commit), decides with
// storedriver.CheckSuccessionSwap and writes. refused is the swap's
// refusal; err a failure of the transaction.
func (s *Store) swapInTx(ctx context.Context, tx pgx.Tx, op string, sw store.Swap) (rec store.Record, refused, err error) {
	r := sw.Record
	c := s.newChain(op, tx, true)
	_, raws, err := c.readRows(ctx, tx, s.sql.lockRecord, false, r.Name)
	if err != nil {
		return store.Record{}, nil, err
	}
	var cur store.Record
	found := len(raws) == 1
	if found {
		settled, err := s.settled(ctx, tx, c, raws)
		if err != nil {
			return store.Record{}, nil, err
		}
		cur = settled[0]
	}
	sw.Record.Via = ""
	next, err := c.resolve(ctx, []store.Record{sw.Record}, false)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return store.Record{}, err, nil
		}
		return store.Record{}, nil, err
	}
	var successor store.Record
	ok := false
	if r.Successor != "" {
		_, succ, err := c.readRows(ctx, tx, s.sql.shareRecord, false, r.Successor)
		if err != nil {
			return store.Record{}, nil, err
		}
		if ok = len(succ) == 1; ok {
			successor = succ[0]
		}
	}
	if refused := storedriver.CheckSuccessionSwap(cur, sw, next[0].rec.Token, successor, ok); refused != nil {
		return store.Record{}, refused, nil
	}
	rec = storedriver.WithSuccessor(sw.Record, cur, successor)
	write := s.sql.writeUpdate
	if !found {
		write = s.sql.writeInsert
	}
	var ignored bool
	err = tx.QueryRow(ctx, write, r.Name, r.Holder, r.Incarnation, int64(r.Token), int64(r.Lease), r.Transfer, r.Session,
		rec.Successor, rec.SuccessorHolder, rec.SuccessorIncarnation, string(sw.Event), s.channel).Scan(&rec.Version, &rec.Updated, &ignored)
	if errors.Is(err, pgx.ErrNoRows) && !found {
		// A concurrent creator committed first.
		return store.Record{}, fmt.Errorf("%w: %q was created concurrently", store.ErrConflict, r.Name), nil
	}
	if err != nil {
		return store.Record{}, nil, err
	}
	rec.Updated = rec.Updated.UTC()
	return rec, nil, nil
}

// resolvedToken is the resolved token of the election record name (0
// when there is none), read in tx with the record locked FOR SHARE and
// the session records of its chain FOR KEY SHARE, so that no takeover or
// succession can commit before tx does: what a fenced ledger write
// compares.
func (s *Store) resolvedToken(ctx context.Context, tx pgx.Tx, op, name string) (uint64, error) {
	c := s.newChain(op, tx, true)
	_, raws, err := c.readRows(ctx, tx, s.sql.shareRecord, false, name)
	if err != nil || len(raws) == 0 {
		return 0, err
	}
	res, err := c.resolve(ctx, raws, false)
	if err != nil {
		return 0, err
	}
	return res[0].rec.Token, nil
}

// referenced reports whether a record points at the session record name:
// a name held through it, or a dead session naming it as its successor
// (two probes of the partial indexes).
func (s *Store) referenced(ctx context.Context, tx pgx.Tx, name string) (bool, error) {
	var ref bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.q+`.election WHERE session = $1 AND session <> '')
		OR EXISTS (SELECT 1 FROM `+s.q+`.election WHERE successor = $1 AND successor <> '')`, name).Scan(&ref)
	return ref, err
}
