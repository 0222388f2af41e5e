package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

var (
	_ store.Store      = (*Store)(nil)
	_ store.Identifier = (*Store)(nil)
	_ store.TimeSource = (*Store)(nil)
)

// DefaultSchema is the schema that holds baton's tables when the URL has no
// schema parameter.
const DefaultSchema = "baton"

// schemaName is what the schema parameter accepts: a lower-case identifier
// that needs no quoting, short enough that "<schema>_baton" is still a
// valid channel name (63 bytes).
// Compiled on first use, not at start-up: every process links it, few use it.
var schemaName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,56}$`) })

// Store is a store.Store on a PostgreSQL database, over a pgxpool
// connection pool, and a second pool of two connections for Swap alone,
// so that a renewal never waits for a connection behind batched calls. It
// is safe for concurrent use. Open it with Open.
type Store struct {
	pool *pgxpool.Pool
	// swaps is the pool of Swap alone (swapConns connections; nil in a
	// read-only Store): a renewal is a Swap, and it must not wait for a
	// connection behind the batched calls (GetMany, SwapMany: a Group
	// has several in flight), the change feed's catch-up reads or a
	// ledger scan, which can hold every connection of pool.
	swaps   *pgxpool.Pool
	schema  string // plain identifier
	q       string // schema, quoted for SQL
	id      string // the store id, read by Open
	channel string // LISTEN/NOTIFY channel: schema + "_baton"

	sql statements

	version  int  // schema version: SchemaVersion, or an older one read-only
	readOnly bool // opened WithReadOnly: every write is refused

	mu      sync.Mutex
	closed  bool
	watcher *listener // the running listener, nil when none
}

// statements are the store's SQL, with the schema filled in.
type statements struct {
	get, getMany, renew, renewSession, swapOne, swapMany, history, ensureJob, getJob, getRun, lockRun, insertRun, updateRun, runs string
	// Successions (succession.go): rows of (ord, rowCols).
	sessions, sessionsLocked, heldThrough, predecessors, lockRecord, shareRecord, lockNames, settleNames, lastSeq string
	writeUpdate, writeInsert, settleRows, settleLog                                                               string
}

// rowCols are the columns scanRow reads after the ord column: every
// column of an election record, successions included; alias is the
// table's alias in the statement. A schema older than version 7 (read
// only) has no successions and reads as none.
func rowCols(alias string, schemaVersion int) string {
	a := alias + "."
	session, succ := sessionOf(alias, schemaVersion), a+"successor, "+a+"successor_holder, "+a+"successor_incarnation"
	if schemaVersion < 7 {
		succ = "''::text AS successor, ''::text AS successor_holder, ''::text AS successor_incarnation"
	}
	return a + "name, " + a + "holder, " + a + "incarnation, " + a + "token, " + a + "lease_ns, " + a + "transfer, " +
		session + " AS session, " + a + "version, " + a + "updated, " + succ
}

func newStatements(q string, schemaVersion int) statements {
	detail, session := "detail", "session"
	if schemaVersion < 2 {
		detail = "''" // a version 1 schema, read-only: no details
	}
	if schemaVersion < 3 {
		session = "''" // a version 1 or 2 schema, read-only: no sessions
	}
	cols := func(alias string) string { return rowCols(alias, schemaVersion) }
	passedRenewal := ` AND NOT ` + passedSQL(q, "e.session")
	if schemaVersion < 7 {
		passedRenewal = "" // read-only: no renewals
	}
	const out = `s.o_applied, s.o_holder, s.o_incarnation, s.o_token, s.o_lease_ns, s.o_transfer, s.o_session, s.o_version, s.o_updated`
	const runCols = `job, period, scheduled, state, token, holder, attempt, manual, started, finished, exit_code, output, version`
	return statements{
		// The record, the session record it names and that session's
		// successor, if it names one (ord 0), in one statement (one
		// snapshot): what store.Resolve asks for when at most one
		// succession passed the record on (succession.go); a chain of
		// two or more is read again, a hop a query.
		get: `SELECT 1::bigint, ` + cols("e") + ` FROM ` + q + `.election e WHERE e.name = $1
			UNION ALL
			SELECT 0, ` + cols("s") + ` FROM ` + q + `.election e JOIN ` + q + `.election s ON s.name = ` + sessionOf("e", schemaVersion) + `
			WHERE e.name = $1 AND ` + sessionOf("e", schemaVersion) + ` <> ''
			UNION ALL
			SELECT 0, ` + cols("t") + ` FROM ` + q + `.election e JOIN ` + q + `.election s ON s.name = ` + sessionOf("e", schemaVersion) + `
				JOIN ` + q + `.election t ON t.name = ` + successorOf("s", schemaVersion) + `
			WHERE e.name = $1 AND ` + sessionOf("e", schemaVersion) + ` <> '' AND ` + successorOf("s", schemaVersion) + ` <> ''`,
		// One index probe per name (LIMIT 1 keeps the subquery from being
		// flattened into a join the planner could run as a scan of the
		// table; name = ANY($1) can, in a generic plan, compare every row
		// with every name), then one per distinct session record they
		// name, then one per distinct successor those name (ord 0): a
		// read after a succession (the adoption reads of a bulk
		// takeover) is one statement too.
		getMany: `WITH r AS MATERIALIZED (SELECT n.ord, e.* FROM unnest($1::text[]) WITH ORDINALITY n(name, ord)
				CROSS JOIN LATERAL (SELECT ` + cols("e") + ` FROM ` + q + `.election e WHERE e.name = n.name LIMIT 1) e),
			s1 AS MATERIALIZED (SELECT 0::bigint AS ord, s.* FROM (SELECT DISTINCT r.session FROM r WHERE r.session <> '') d
				CROSS JOIN LATERAL (SELECT ` + cols("s") + ` FROM ` + q + `.election s WHERE s.name = d.session LIMIT 1) s)
			SELECT r.* FROM r
			UNION ALL
			SELECT s1.* FROM s1
			UNION ALL
			SELECT 0, t.* FROM (SELECT DISTINCT s1.successor FROM s1 WHERE s1.successor <> '') d
				CROSS JOIN LATERAL (SELECT ` + cols("t") + ` FROM ` + q + `.election t WHERE t.name = d.successor LIMIT 1) t`,
		sessions:       `SELECT 0::bigint, ` + cols("s") + ` FROM ` + q + `.election s WHERE s.name = ANY($1::text[])`,
		sessionsLocked: `SELECT 0::bigint, ` + cols("s") + ` FROM ` + q + `.election s WHERE s.name = ANY($1::text[]) ORDER BY s.name FOR KEY SHARE`,
		// A range of the session index (the partial index's condition
		// spelled out, so that a generic plan uses it).
		heldThrough: `SELECT 1::bigint, ` + cols("e") + ` FROM ` + q + `.election e
			WHERE e.session = $1 AND e.session <> '' AND e.name > $2 ORDER BY e.name LIMIT $3`,
		// The dead session records that name one of $1 as successor
		// (the successor index): a step back along chains.
		predecessors: `SELECT name FROM ` + q + `.election WHERE successor = ANY($1::text[]) AND successor <> ''`,
		lockRecord:   `SELECT 1::bigint, ` + cols("e") + ` FROM ` + q + `.election e WHERE e.name = $1 FOR UPDATE`,
		shareRecord:  `SELECT 1::bigint, ` + cols("e") + ` FROM ` + q + `.election e WHERE e.name = $1 FOR SHARE`,
		// The records of a batch's names (sorted, distinct), locked in
		// name order, one probe each.
		lockNames: `SELECT n.ord, e.* FROM unnest($1::text[]) WITH ORDINALITY n(name, ord)
			CROSS JOIN LATERAL (SELECT ` + cols("e") + ` FROM ` + q + `.election e WHERE e.name = n.name LIMIT 1 FOR UPDATE) e`,
		// The names held through a session, but session records, locked
		// in name order (Settle).
		settleNames: `SELECT 1::bigint, ` + cols("e") + ` FROM ` + q + `.election e
			WHERE e.session = $1 AND e.session <> '' AND NOT starts_with(e.name, '` + store.SessionPrefix + `')
			ORDER BY e.name LIMIT $2 FOR UPDATE`,
		lastSeq: `SELECT coalesce(max(seq), 0) FROM ` + q + `.election_log WHERE name = $1`,
		// A swap decided in Go (succession.go): the record written, its
		// log event appended, the change feed notified, in one statement.
		writeUpdate: `WITH w AS (UPDATE ` + q + `.election SET holder = $2, incarnation = $3, token = $4, lease_ns = $5,
				transfer = $6, session = $7, successor = $8, successor_holder = $9, successor_incarnation = $10,
				version = nextval('` + q + `.version_seq'), updated = clock_timestamp(), wxid = ` + currentXID + `
				WHERE name = $1 RETURNING *)` + writeTail(q),
		writeInsert: `WITH w AS (INSERT INTO ` + q + `.election (name, holder, incarnation, token, lease_ns, transfer,
				session, successor, successor_holder, successor_incarnation, version, updated, wxid)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, nextval('` + q + `.version_seq'), clock_timestamp(), ` + currentXID + `)
				ON CONFLICT (name) DO NOTHING RETURNING *)` + writeTail(q),
		// Settle: records rewritten as resolved, versions kept, wxid
		// kept (nothing a reader acts on changes, nothing for the change
		// feed); then their succession events, numbered after each
		// name's log.
		settleRows: `UPDATE ` + q + `.election e SET holder = r.holder, incarnation = r.incarnation, token = r.token,
				session = r.session, version = r.version, updated = r.updated
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::timestamptz[])
				AS r(name, holder, incarnation, token, session, version, updated)
			WHERE e.name = r.name`,
		settleLog: `INSERT INTO ` + q + `.election_log (name, seq, kind, holder, incarnation, token, transfer, time, detail)
			SELECT r.name, coalesce((SELECT max(l.seq) FROM ` + q + `.election_log l WHERE l.name = r.name), 0) + r.k,
				r.kind, r.holder, r.incarnation, r.token, r.transfer, r.time, r.detail
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::timestamptz[], $9::text[])
				AS r(name, k, kind, holder, incarnation, token, transfer, time, detail)`,
		// A name's renewal (storedriver.Renews) as one UPDATE of the record's
		// version and updated columns, and nothing else: neither column
		// is indexed and wxid stays, so the update is a heap-only tuple
		// update of one page (no index entry, no change-feed row); no
		// notification (a renewal need not be on the feed); the sequence
		// is one nextval, as for every version. The store id is checked
		// in the same statement. No row: not a renewal of the record as
		// it is (or another store), and Swap asks swap_one.
		renew: `UPDATE ` + q + `.election e SET version = nextval('` + q + `.version_seq'), updated = clock_timestamp()
			WHERE e.name = $2 AND e.version = $3 AND e.holder = $4 AND e.holder <> '' AND e.incarnation = $5
			  AND e.token = $6 AND e.lease_ns = $7 AND e.transfer = $8 AND e.` + session + ` = $9` + passedRenewal + `
			  AND EXISTS (SELECT 1 FROM ` + q + `.meta m WHERE m.key = 'store_id' AND m.value = $1)
			RETURNING e.version, e.updated`,
		// A session's renewal (storedriver.RenewsSession): the same
		// one-row UPDATE, and a notification on the store's channel ($10)
		// whose payload names the record and its new version (see
		// sessionPayloadTag), sent at the commit: the change feed reports
		// the renewal from the payload (a session's observers learn of its
		// renewals there), without the wxid write (an entry in wxid's
		// index) that swap_one's feed needs. The notification is a
		// RETURNING expression, evaluated for the updated row alone. A
		// session record is held through no session (Swap sends it here
		// only with Session empty), so there is no succession to check.
		renewSession: `UPDATE ` + q + `.election e SET version = nextval('` + q + `.version_seq'), updated = clock_timestamp()
			WHERE e.name = $2 AND e.version = $3 AND e.holder = $4 AND e.holder <> '' AND e.incarnation = $5
			  AND e.token = $6 AND e.lease_ns = $7 AND e.transfer = $8 AND e.` + session + ` = ''
			  AND EXISTS (SELECT 1 FROM ` + q + `.meta m WHERE m.key = 'store_id' AND m.value = $1)
			RETURNING e.version, e.updated, pg_notify($9, '` + sessionPayloadTag + `' || e.version::text || ' ' || $2)`,
		// swap_one and swap_many check the store id themselves.
		swapOne: `SELECT ` + out + `
			FROM ` + q + `.swap_one($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) s`,
		swapMany: `SELECT s.o_ord, ` + out + `
			FROM ` + q + `.swap_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) s`,
		history: `SELECT seq, kind, holder, incarnation, token, transfer, time, ` + detail + ` FROM ` + q + `.election_log WHERE name = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		ensureJob: `INSERT INTO ` + q + `.jobs (name, schedule, created, prefer, prefer_hysteresis_ns) VALUES ($1, $2, clock_timestamp(), $3, $4)
			ON CONFLICT (name) DO NOTHING RETURNING ` + jobCols(schemaVersion),
		getJob:  `SELECT ` + jobCols(schemaVersion) + ` FROM ` + q + `.jobs WHERE name = $1`,
		getRun:  `SELECT ` + runCols + ` FROM ` + q + `.runs WHERE job = $1 AND period = $2`,
		lockRun: `SELECT ` + runCols + ` FROM ` + q + `.runs WHERE job = $1 AND period = $2 FOR UPDATE`,
		insertRun: `INSERT INTO ` + q + `.runs (` + runCols + `)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nextval('` + q + `.version_seq'))
			ON CONFLICT (job, period) DO NOTHING RETURNING ` + runCols,
		updateRun: `UPDATE ` + q + `.runs SET scheduled = $3, state = $4, token = $5, holder = $6, attempt = $7,
			manual = $8, started = $9, finished = $10, exit_code = $11, output = $12,
			version = nextval('` + q + `.version_seq')
			WHERE job = $1 AND period = $2 RETURNING ` + runCols,
		runs: `SELECT ` + runCols + ` FROM ` + q + `.runs WHERE job = $1 AND period > $2 ORDER BY period LIMIT $3`,
	}
}

// sessionOf is the session column of the table aliased alias, or the
// empty text in a schema older than version 3 (read-only).
// successorOf is the successor column of alias, or an empty text in a
// schema older than version 7 (read only), which has none.
func successorOf(alias string, schemaVersion int) string {
	if schemaVersion < 7 {
		return "''::text"
	}
	return alias + ".successor"
}

func sessionOf(alias string, schemaVersion int) string {
	if schemaVersion < 3 {
		return "''::text"
	}
	return alias + ".session"
}

// writeTail ends writeUpdate and writeInsert: the log event ($11, none
// when empty) and the notification on channel $12.
func writeTail(q string) string {
	return `, lg AS (INSERT INTO ` + q + `.election_log (name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT w.name, coalesce((SELECT max(l.seq) FROM ` + q + `.election_log l WHERE l.name = w.name), 0) + 1,
					$11, w.holder, w.incarnation, w.token, w.transfer, w.updated
				FROM w WHERE $11 <> '')
			SELECT w.version, w.updated, pg_notify($12, '` + notifyPayload + `') IS NULL FROM w`
}

// Option configures Open. An invalid value makes Open fail with an error
// that wraps store.ErrInvalid and names the option.
type Option func(*config) error

type config struct {
	poolConfig []func(*pgxpool.Config)
	readOnly   bool
}

// WithReadOnly opens the store for reading only, as the read commands
// (status, runs, history, next) do: every session is read-only
// (default_transaction_read_only), no schema, table or function is created
// and nothing is written, so a role with nothing but USAGE on the schema
// and SELECT on its tables works. A schema that does not exist is an error
// wrapping store.ErrNotFound ("no baton store at ..."); one that is not a
// baton store (no meta table, an unknown version) one wrapping
// store.ErrSchema. A schema of an older version (1 or 2) is read as it
// is: records read as held without a session, and WatchChanges returns
// closed channels (callers poll). Write methods fail with
// store.ErrInvalid.
func WithReadOnly() Option {
	return func(c *config) error {
		c.readOnly = true
		return nil
	}
}

// WithPoolConfig lets fn adjust the pgxpool configuration parsed from the
// URL before the pool is created (pool sizes, tracers, TLS). Pool settings
// can also be given as URL parameters such as pool_max_conns.
func WithPoolConfig(fn func(*pgxpool.Config)) Option {
	return func(c *config) error {
		if fn == nil {
			return storedriver.InvalidOption("postgres", "pool-config", "nil", "a function that adjusts the pool configuration")
		}
		c.poolConfig = append(c.poolConfig, fn)
		return nil
	}
}

// Open connects to the PostgreSQL database at rawURL
// (postgres://user:password@host:port/database?params) and returns a Store
// on it. The optional URL parameter schema (default "baton") names the
// schema that holds baton's tables; it must be a plain lower-case
// identifier and is removed from the URL before connecting. Other
// parameters are those of pgx and pgxpool.
//
// On first use Open creates the schema and its tables; if they exist, it
// checks their version and returns an error wrapping store.ErrSchema when
// it is not SchemaVersion, changing nothing. An unreachable server gives
// an error wrapping store.ErrUnavailable; a malformed URL or option one
// wrapping store.ErrInvalid. ctx bounds the connection and schema setup
// only, not the Store's life.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	var o config
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.readOnly {
		return openReadOnly(ctx, rawURL, o)
	}
	pool, schema, err := newPool(ctx, rawURL, o)
	if err != nil {
		return nil, err
	}
	q := pgx.Identifier{schema}.Sanitize()
	s := &Store{
		pool:    pool,
		schema:  schema,
		q:       q,
		channel: schema + "_baton",
		sql:     newStatements(q, SchemaVersion),
		version: SchemaVersion,
	}
	if err := setup(ctx, pool, schema, q, s.channel); err != nil {
		pool.Close()
		if errors.Is(err, store.ErrSchema) {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		return nil, s.fail(ctx, "open", err)
	}
	if err := pool.QueryRow(ctx, storeIDQuery(q)).Scan(&s.id); err != nil {
		pool.Close()
		return nil, s.fail(ctx, "open", err)
	}
	cfg := pool.Config()
	cfg.MaxConns, cfg.MinConns, cfg.MinIdleConns = swapConns, 0, 0
	if s.swaps, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		pool.Close()
		return nil, s.fail(ctx, "open", err)
	}
	return s, nil
}

// swapConns is the size of a Store's pool for Swap: two, so that two
// renewals of one process (two Electors, or a session and a name) need
// not wait for each other's round trip.
const swapConns = 2

// newPool parses rawURL, applies the WithPoolConfig functions of o and
// creates the connection pool, whose sessions are read-only when o is
// (default_transaction_read_only). It returns the pool and the schema the
// URL names. A malformed URL, or a configuration pgxpool refuses, is an
// error wrapping store.ErrInvalid; a ctx already ended one wrapping
// store.ErrUnavailable.
func newPool(ctx context.Context, rawURL string, o config) (*pgxpool.Pool, string, error) {
	connURL, schema, err := parseURL(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	cfg, err := pgxpool.ParseConfig(connURL)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	for _, fn := range o.poolConfig {
		fn(cfg)
	}
	if o.readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if err := ctx.Err(); err != nil {
		return nil, "", unavailable("open", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	return pool, schema, nil
}

// parseURL splits the schema parameter off a postgres URL.
func parseURL(rawURL string) (connURL, schema string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the whole URL, password included: keep only
		// the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", "", fmt.Errorf("store URL cannot be parsed: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", "", fmt.Errorf("store URL %q: scheme must be postgres or postgresql", u.Redacted())
	}
	params, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", "", fmt.Errorf("store URL parameters cannot be parsed: %w", err)
	}
	for k, vs := range params {
		if len(vs) > 1 {
			return "", "", fmt.Errorf("store URL: parameter %s is given %d times; give it once", k, len(vs))
		}
	}
	schema = DefaultSchema
	if params.Has("schema") {
		schema = params.Get("schema")
		if !schemaName().MatchString(schema) {
			return "", "", fmt.Errorf("store URL: parameter schema=%q must be a lower-case identifier of at most 57 characters ([a-z_][a-z0-9_]*)", schema)
		}
		params.Del("schema")
		u.RawQuery = params.Encode()
	}
	return u.String(), schema, nil
}

// Capabilities implements store.Store: every optional capability (the
// server's clock_timestamp() is its clock).
func (s *Store) Capabilities() store.Capabilities { return store.AllCapabilities }

// Close closes the change feeds and the connection pool. It does not change any
// record. Calls after Close fail with store.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	l := s.watcher
	s.watcher = nil
	s.mu.Unlock()
	if l != nil {
		l.stop()
	}
	s.pool.Close()
	if s.swaps != nil {
		s.swaps.Close()
	}
	return nil
}

// enter returns the error a call must return at once: the store is closed
// or ctx has already ended.
func (s *Store) enter(ctx context.Context, op string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("postgres: %s: %w: store is closed", op, store.ErrUnavailable)
	}
	if err := ctx.Err(); err != nil {
		return unavailable(op, err)
	}
	return nil
}

func unavailable(op string, err error) error {
	return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrUnavailable, err)
}

// fail maps an error from the driver to the store's errors: anything that
// means the server could not be reached or could not decide (connection
// lost or refused, ctx ended, the server shutting down or starting up, a
// cancelled statement, a serialization failure or deadlock, too many
// connections, a read-only standby) wraps store.ErrUnavailable; refused
// credentials, a database that does not exist and a missing privilege
// wrap no sentinel (the server answered: waiting will not change it); a value the
// database cannot store (such as a NUL byte in a name) wraps
// store.ErrInvalid; a missing schema or table wraps store.ErrSchema; a
// corrupt page and a failed integrity constraint wrap store.ErrCorrupt.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w: %w (%w)", op, store.ErrUnavailable, cerr, err)
	}
	if errors.Is(err, store.ErrCorrupt) { // a row baton did not write (store.CheckRunState)
		return fmt.Errorf("postgres: %s: schema %q: %w", op, s.schema, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case code == "25006" && s.readOnly: // read-only transaction: ours
			return fmt.Errorf("postgres: %s: %w: the store was opened read-only: %w", op, store.ErrInvalid, err)
		case code[:2] == "08", // connection exception
			code[:2] == "53",                 // insufficient resources (too many connections, ...)
			code[:2] == "57",                 // operator intervention: admin/crash shutdown, cannot connect now, query canceled
			code[:2] == "40",                 // transaction rollback: serialization failure, deadlock
			code == "55P03",                  // lock not available
			code == "25006",                  // read-only transaction: a standby, not the primary
			code == "58000", code == "58030": // system or I/O error
			return unavailable(op, err)
		case code[:2] == "28", // invalid authorization: a wrong password (28P01), no pg_hba.conf entry (28000)
			code == "3D000", // the database does not exist
			code == "42501": // insufficient privilege
			// The server answered, and waiting will not change its
			// answer: not unavailable.
			return fmt.Errorf("postgres: %s: %w", op, err)
		case code[:2] == "22": // data exception
			return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrInvalid, err)
		case code == "3F000", code == "42P01", code == "42883": // no schema, table, function
			if s.id == "" { // while opening
				return fmt.Errorf("postgres: %s: %w: the baton schema %q is missing or damaged: %w", op, store.ErrSchema, s.schema, err)
			}
			return fmt.Errorf("postgres: %s: %w: the baton schema %q this process opened is gone (dropped?): %w", op, store.ErrReplaced, s.schema, err)
		case code == "XX001", code == "XX002": // data or index corrupted
			return fmt.Errorf("postgres: %s: %w: schema %q: %w", op, store.ErrCorrupt, s.schema, err)
		case code[:2] == "23": // integrity constraint violation
			// baton checks every value it writes: a constraint that fails
			// is one it did not make, or data it did not write.
			return fmt.Errorf("postgres: %s: %w: schema %q refuses the write with a constraint baton did not expect (its tables were changed by another program): %w", op, store.ErrCorrupt, s.schema, err)
		}
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Everything else the driver returns is about the connection: refused,
	// reset or closed, a closed pool, timeouts, context errors.
	return unavailable(op, err)
}

// StoreTime implements store.TimeSource: the server's clock_timestamp().
func (s *Store) StoreTime(ctx context.Context) (time.Time, error) {
	if err := s.enter(ctx, "store time"); err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, s.fail(ctx, "store time", err)
	}
	return t.UTC(), nil
}

// readable says whether a read-only opener reads schema version v: 1 to
// SchemaVersion.
func readable(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && strconv.Itoa(n) == v && n >= 1 && n <= SchemaVersion
}

// openReadOnly is Open with WithReadOnly.
func openReadOnly(ctx context.Context, rawURL string, o config) (*Store, error) {
	pool, schema, err := newPool(ctx, rawURL, o)
	if err != nil {
		return nil, err
	}
	q := pgx.Identifier{schema}.Sanitize()
	s := &Store{pool: pool, schema: schema, q: q, channel: schema + "_baton", readOnly: true}
	var exists, meta bool
	err = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
		schema, q+".meta").Scan(&exists, &meta)
	var v string
	if err == nil && meta {
		err = pool.QueryRow(ctx, `SELECT value FROM `+q+`.meta WHERE key = 'schema_version'`).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			err, v = nil, ""
		}
	}
	switch {
	case err != nil:
		err = s.fail(ctx, "open", err)
	case !exists:
		err = store.NoStore(fmt.Sprintf("schema %q of the database (it has no such schema)", schema))
	case !meta:
		err = fmt.Errorf("postgres: %w: postgres schema %q has no baton meta table, not a baton store; baton left it untouched: point the URL's schema parameter at another schema", store.ErrSchema, schema)
	case !readable(v):
		err = fmt.Errorf("postgres: %w: schema %q is not a baton store this baton reads (schema version %q; this baton supports 1 to %d)", store.ErrSchema, schema, v, SchemaVersion)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.version, _ = strconv.Atoi(v)
	s.sql = newStatements(q, s.version)
	return s, nil
}

// writable refuses a write on a store opened read-only.
func (s *Store) writable(op string) error {
	if s.readOnly {
		return fmt.Errorf("postgres: %s: %w: the store was opened read-only", op, store.ErrInvalid)
	}
	return nil
}
