package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"

	"github.com/batonhq/baton/store"
)

// sessionPrefixEnd is the least string above every name that begins with
// store.SessionPrefix ("@session/"): the prefix with its last byte, '/',
// raised by one (TestSessionPrefixEnd checks it).
const sessionPrefixEnd = "@session0"

// stmts are the statements the election record's hot paths run, prepared
// once per connection (database/sql prepares a *sql.Stmt again on each
// pooled connection it runs on, once): SQLite then parses and plans them
// once, not at every call.
type stmts struct {
	get     *sql.Stmt // the record of one name
	getMany *sql.Stmt // the records of the names in a JSON array
	newest  *sql.Stmt // the newest record version
	// Writes; nil in a read-only Store.
	lastVersion *sql.Stmt // the store-wide counter (counterKey)
	setVersion  *sql.Stmt
	renew       *sql.Stmt // a renewal: renewStmt
	sessions    *sql.Stmt // the held session records' versions: sessionsStmt
	// current reads the record (if any) and the newest log sequence
	// number of each name in a JSON array: the record's log_seq, or, for a
	// name without a record, the log's max(seq) (a deleted session record
	// may have left events in the log; a new name has none, and the
	// search finds nothing)
	current *sql.Stmt
	// take, takePlain and takeLog write a batch of takes, anyPassedOn
	// chooses between the first two: see takeStmt.
	take, takePlain, takeLog, anyPassedOn *sql.Stmt
	// upsert's statement k writes 1<<k records, logEvent's appends 1<<k
	// log events: see writeRows and rowStmts.
	upsert   rowStmts
	logEvent rowStmts
	// wanted says that a statement of upsert or logEvent was run
	// unprepared: the next write prepares it first (prepareWanted).
	wanted atomic.Bool
}

// eagerKinds is how many sizes of the multi-row statements Open prepares:
// 1 and 2 rows, what a single swap writes (one record; its event, and the
// implied events of a succession). The larger ones (4 to 64 rows) are
// run only by batches. Prepared, they hold about 340 KB of SQLite's memory
// on each connection they are prepared on (SQLITE_DBSTATUS_STMT_USED:
// 7-87 KB each, 4-64 rows), which a node that never writes a batch
// would keep for nothing: each is prepared after a write first needs
// it (see rowStmts.exec).
const eagerKinds = 2

// rowStmts is the multi-row statements of one table: statement k writes
// 1<<k rows of args parameters each, its text rowsSQL(head, 1<<k, args,
// tail). Those of k < eagerKinds are prepared at Open, the others on
// first use: see exec.
type rowStmts struct {
	head, tail string
	args       int
	st         [blockKinds]atomic.Pointer[sql.Stmt]
	wanted     [blockKinds]atomic.Bool // run unprepared, to be prepared
}

// text is the SQL of statement k.
func (r *rowStmts) text(k int) string { return rowsSQL(r.head, 1<<k, r.args, r.tail) }

// exec runs statement k in b's transaction with args: prepared, or, until
// it is, from its text (SQLite prepares it for this one call), and then
// marks it wanted so that the Store's next write prepares it
// (prepareWanted). Preparing it here, in the transaction, would wait for
// a pooled connection while this one holds the write lock, and with the
// smallest pool (WithMaxConns 2: the poller's and this one) none comes.
func (r *rowStmts) exec(b *bound, wanted *atomic.Bool, k int, args []any) error {
	if p := r.st[k].Load(); p != nil {
		_, err := b.stmt(p).ExecContext(b.ctx, args...)
		return err
	}
	r.wanted[k].Store(true)
	wanted.Store(true)
	_, err := b.tx.ExecContext(b.ctx, r.text(k), args...)
	return err
}

// prepare prepares statement k, unless it is.
func (r *rowStmts) prepare(ctx context.Context, db *sql.DB, k int) error {
	if r.st[k].Load() != nil {
		return nil
	}
	p, err := db.PrepareContext(ctx, r.text(k))
	if err != nil {
		return err
	}
	r.st[k].Store(p)
	return nil
}

// prepareWanted prepares the multi-row statements that writes ran
// unprepared (rowStmts.exec). A write calls it in its turn, before it
// begins its transaction, so that no other write of the Store runs
// meanwhile and it holds no connection while it waits for one. A
// statement it fails to prepare stays wanted: the next write tries
// again, and writes run it from its text until then.
func (s *Store) prepareWanted(ctx context.Context) {
	if !s.st.wanted.Swap(false) {
		return
	}
	for _, r := range []*rowStmts{&s.st.upsert, &s.st.logEvent} {
		for k := range blockKinds {
			if !r.wanted[k].Load() {
				continue
			}
			if err := r.prepare(ctx, s.db, k); err != nil {
				s.st.wanted.Store(true)
				continue
			}
			r.wanted[k].Store(false)
		}
	}
}

// Multi-row writes. A SwapMany writes its records with multi-row
// INSERT statements of blockRows rows, and the rest of them with one
// statement each of the sizes of the binary digits of the rest (32, 16,
// ..., 1 rows): blockKinds statements per table, prepared once per
// connection, so that a batch of n swaps runs about n/blockRows + log2
// blockRows statements per table instead of n. Each row binds recordArgs
// or eventArgs parameters: blockRows times either stays far below SQLite's
// bound on the parameters of one statement (32,766 in modernc.org/sqlite).
const (
	blockKinds = 7
	blockRows  = 1 << (blockKinds - 1) // 64
	recordArgs = 14
	eventArgs  = 9
)

// rowsSQL is head followed by n rows of k parameters each, then tail.
func rowsSQL(head string, n, k int, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(" VALUES ")
	row := "(" + strings.Repeat("?, ", k-1) + "?)"
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	return b.String()
}

const (
	// upsertHead and upsertTail write records with their log_seq: the
	// sequence number of the name's newest log event once the batch's
	// events are written (see swapRows).
	upsertHead = `INSERT INTO baton_election (name, holder, incarnation, token, lease_ns, transfer, version, updated_ns, session, changed, log_seq,
		successor, successor_holder, successor_incarnation)`
	upsertTail = ` ON CONFLICT (name) DO UPDATE SET
		holder = excluded.holder, incarnation = excluded.incarnation, token = excluded.token,
		lease_ns = excluded.lease_ns, transfer = excluded.transfer, version = excluded.version,
		updated_ns = excluded.updated_ns, session = excluded.session, changed = excluded.changed,
		log_seq = excluded.log_seq, successor = excluded.successor, successor_holder = excluded.successor_holder,
		successor_incarnation = excluded.successor_incarnation`
	// renewStmt is a renewal (storedriver.Renews, or RenewsSession of a
	// session record) as one UPDATE that writes the record's version and
	// updated_ns and nothing else: one page of baton_election. What it
	// leaves out, and why that is enough:
	//   - changed, and so baton_election_changed: a name's renewal need
	//     not be on the change feed (store.Store.WatchChanges); a
	//     session's is, and the poller finds it by the version instead
	//     (sessionsStmt);
	//   - the store-wide counter (counterKey, a page of baton_meta): the
	//     new version is above the record's own and the counter, so it is
	//     above every version the record had and the counter at its last
	//     other write; a record leaves the counter behind only while
	//     renewals alone write it, and the next other write of it
	//     (nextVersion with its version as floor) raises the counter above
	//     them. A session record is deleted only when free
	//     (DeleteSession), and the write that freed it was not a renewal,
	//     so a deleted session record's version is at most the counter,
	//     and one made again under that name starts above it;
	//   - the log: a renewal has no event.
	// It leaves alone a name whose stored session is dead with a
	// successor (notPassedOn): that renewal goes the general way, which
	// settles the name first (see succession.go).
	// It is a statement of its own (autocommit: one transaction, as a
	// raw UPDATE is), and checks the store id itself (checkStoreID's
	// read, in the statement). No row: not a renewal of the record as it
	// is, or another store, and the swap goes the general way (see
	// Store.Swap).
	renewStmt = `UPDATE baton_election SET
		version = max(version, (SELECT value FROM baton_meta WHERE key = '` + counterKey + `')) + 1, updated_ns = ?1
		WHERE name = ?2 AND version = ?3 AND holder = ?4 AND holder <> '' AND incarnation = ?5 AND token = ?6
		  AND lease_ns = ?7 AND transfer = ?8 AND session = ?9
		  AND (SELECT value FROM baton_meta WHERE key = 'store_id') = ?10
		  AND ` + notPassedOnElection + `
		RETURNING version`
	// sessionsStmt reads the held session records' versions, a range of
	// the primary key on store.SessionPrefix: the poller runs it at every
	// poll that follows a commit, and reports the session records whose
	// version moved, so that a session's renewal, which renewStmt leaves
	// off baton_election_changed, is on the feed as soon as a change is.
	// Its cost grows with the session records stored, one a process
	// that runs a Group (DeleteSession removes dead ones), not with the
	// names.
	sessionsStmt = `SELECT name, version FROM baton_election
		WHERE name >= '` + store.SessionPrefix + `' AND name < '` + sessionPrefixEnd + `' AND holder <> ''`
	logHead = `INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns, detail)`
)

// prepare prepares s.st for the store's schema version.
func (s *Store) prepare(ctx context.Context) error {
	sel := `SELECT name, ` + recordCols + s.sessionCol() + `, ` + s.successorCols() + ` FROM baton_election `
	type text struct {
		st   **sql.Stmt
		text string
	}
	texts := []text{
		{&s.st.get, sel + `WHERE name = ?`},
		{&s.st.getMany, sel + `WHERE name IN (SELECT value FROM json_each(?))`},
		{&s.st.newest, `SELECT coalesce(max(` + s.changedCol() + `), 0) FROM baton_election`},
		{&s.st.sessions, sessionsStmt},
	}
	if !s.readOnly {
		texts = append(texts,
			text{&s.st.lastVersion, `SELECT value FROM baton_meta WHERE key = '` + counterKey + `'`},
			text{&s.st.setVersion, `UPDATE baton_meta SET value = ? WHERE key = '` + counterKey + `'`},
			text{&s.st.renew, renewStmt},
			text{&s.st.take, takeStmt},
			text{&s.st.takePlain, takePlainStmt},
			text{&s.st.anyPassedOn, anyPassedOnStmt},
			text{&s.st.takeLog, takeLogStmt},
			text{&s.st.current, `SELECT j.value, coalesce(e.holder, ''), coalesce(e.incarnation, ''), coalesce(e.token, 0), coalesce(e.lease_ns, 0),
				coalesce(e.transfer, ''), coalesce(e.version, 0), e.updated_ns, coalesce(e.session, ''), coalesce(e.changed, 0),
				coalesce(e.log_seq, (SELECT coalesce(max(l.seq), 0) FROM baton_election_log l WHERE l.name = j.value)),
				nullif(e.successor, ''), nullif(e.successor_holder, ''), nullif(e.successor_incarnation, '')
			 FROM json_each(?) j LEFT JOIN baton_election e ON e.name = j.value`},
		)
	}
	for _, t := range texts {
		st, err := s.db.PrepareContext(ctx, t.text)
		if err != nil {
			return s.fail(ctx, "open", err)
		}
		*t.st = st
	}
	if s.readOnly {
		return nil
	}
	s.st.upsert.head, s.st.upsert.tail, s.st.upsert.args = upsertHead, upsertTail, recordArgs
	s.st.logEvent.head, s.st.logEvent.args = logHead, eventArgs
	for k := range eagerKinds {
		for _, r := range []*rowStmts{&s.st.upsert, &s.st.logEvent} {
			if err := r.prepare(ctx, s.db, k); err != nil {
				return s.fail(ctx, "open", err)
			}
		}
	}
	return nil
}

// all is every statement of st, nil ones included.
func (st *stmts) all() []*sql.Stmt {
	out := []*sql.Stmt{st.get, st.getMany, st.newest, st.sessions, st.lastVersion, st.setVersion, st.renew, st.current, st.take, st.takePlain, st.takeLog, st.anyPassedOn}
	for k := range blockKinds {
		out = append(out, st.upsert.st[k].Load(), st.logEvent.st[k].Load())
	}
	return out
}

// close closes the statements that were prepared.
func (st *stmts) close() {
	for _, p := range st.all() {
		if p != nil {
			p.Close()
		}
	}
}

// bound is the write statements of s.st bound to one transaction, each
// when first used.
type bound struct {
	ctx context.Context
	tx  *sql.Tx
	st  *stmts
	// tx's statement of each statement of st used so far
	used map[*sql.Stmt]*sql.Stmt
}

// bind binds the write statements to tx, for the length of tx.
func (s *Store) bind(ctx context.Context, tx *sql.Tx) *bound {
	return &bound{ctx: ctx, tx: tx, st: &s.st, used: make(map[*sql.Stmt]*sql.Stmt, 8)}
}

// stmt is p bound to b's transaction.
func (b *bound) stmt(p *sql.Stmt) *sql.Stmt {
	t, ok := b.used[p]
	if !ok {
		t = b.tx.StmtContext(b.ctx, p)
		b.used[p] = t
	}
	return t
}

func (b *bound) close() {
	for _, t := range b.used {
		t.Close()
	}
}
