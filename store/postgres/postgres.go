package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
)

var (
	_ store.Store        = (*Store)(nil)
	_ store.Watcher      = (*Store)(nil)
	_ store.BatchSwapper = (*Store)(nil)
)

// DefaultSchema is the schema that holds baton's tables when the URL has no
// schema parameter.
const DefaultSchema = "baton"

// schemaName is what the schema parameter accepts: a lower-case identifier
// that needs no quoting, short enough that "<schema>_baton" is still a
// valid channel name (63 bytes).
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,56}$`)

// Store is a store.Store on a PostgreSQL database, over a pgxpool
// connection pool. It is safe for concurrent use. Open it with Open.
type Store struct {
	pool    *pgxpool.Pool
	schema  string // plain identifier
	q       string // schema, quoted for SQL
	channel string // LISTEN/NOTIFY channel: schema + "_baton"

	sql statements

	mu      sync.Mutex
	closed  bool
	watcher *listener // the running listener, nil when none
}

// statements are the store's SQL, with the schema filled in.
type statements struct {
	get, swap, history, ensureJob, getJob, getRun, lockRun, insertRun, updateRun, runs, electionToken string
}

func newStatements(q string) statements {
	const runCols = `job, period, scheduled, state, token, holder, attempt, manual, started, finished, exit_code, output, version`
	return statements{
		get:     `SELECT holder, incarnation, token, lease_ns, transfer, version, updated FROM ` + q + `.election WHERE name = $1`,
		swap:    `SELECT o_applied, o_holder, o_incarnation, o_token, o_lease_ns, o_transfer, o_version, o_updated FROM ` + q + `.swap($1, $2, $3, $4, $5, $6, $7, $8)`,
		history: `SELECT seq, kind, holder, incarnation, token, transfer, time FROM ` + q + `.election_log WHERE name = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		ensureJob: `INSERT INTO ` + q + `.jobs (name, schedule, created) VALUES ($1, $2, clock_timestamp())
			ON CONFLICT (name) DO NOTHING RETURNING schedule, created`,
		getJob:        `SELECT schedule, created FROM ` + q + `.jobs WHERE name = $1`,
		getRun:        `SELECT ` + runCols + ` FROM ` + q + `.runs WHERE job = $1 AND period = $2`,
		lockRun:       `SELECT ` + runCols + ` FROM ` + q + `.runs WHERE job = $1 AND period = $2 FOR UPDATE`,
		electionToken: `SELECT token FROM ` + q + `.election WHERE name = $1 FOR SHARE`,
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

// Option configures Open.
type Option func(*options) error

type options struct {
	poolConfig []func(*pgxpool.Config)
}

// WithPoolConfig lets fn adjust the pgxpool configuration parsed from the
// URL before the pool is created (pool sizes, tracers, TLS). Pool settings
// can also be given as URL parameters such as pool_max_conns.
func WithPoolConfig(fn func(*pgxpool.Config)) Option {
	return func(o *options) error {
		if fn == nil {
			return errors.New("WithPoolConfig: fn is nil")
		}
		o.poolConfig = append(o.poolConfig, fn)
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
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
		}
	}
	connURL, schema, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	cfg, err := pgxpool.ParseConfig(connURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	for _, fn := range o.poolConfig {
		fn(cfg)
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable("open", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", store.ErrInvalid, err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	s := &Store{
		pool:    pool,
		schema:  schema,
		q:       q,
		channel: schema + "_baton",
		sql:     newStatements(q),
	}
	if err := setup(ctx, pool, schema, q, s.channel); err != nil {
		pool.Close()
		if errors.Is(err, store.ErrSchema) {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		return nil, s.fail(ctx, "open", err)
	}
	return s, nil
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
	schema = DefaultSchema
	if params.Has("schema") {
		schema = params.Get("schema")
		if len(params["schema"]) > 1 || !schemaName.MatchString(schema) {
			return "", "", fmt.Errorf("store URL: parameter schema=%q must appear once and be a lower-case identifier of at most 57 characters ([a-z_][a-z0-9_]*)", schema)
		}
		params.Del("schema")
		u.RawQuery = params.Encode()
	}
	return u.String(), schema, nil
}

// Close closes the watches and the connection pool. It does not change any
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
// connections, a read-only standby) wraps store.ErrUnavailable; a value the
// database cannot store (such as a NUL byte in a name) wraps
// store.ErrInvalid; a missing schema or table wraps store.ErrSchema.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w: %w (%w)", op, store.ErrUnavailable, cerr, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case code[:2] == "08", // connection exception
			code[:2] == "53",                 // insufficient resources (too many connections, ...)
			code[:2] == "57",                 // operator intervention: admin/crash shutdown, cannot connect now, query canceled
			code[:2] == "40",                 // transaction rollback: serialization failure, deadlock
			code == "55P03",                  // lock not available
			code == "25006",                  // read-only transaction: a standby, not the primary
			code == "58000", code == "58030": // system or I/O error
			return unavailable(op, err)
		case code[:2] == "22": // data exception
			return fmt.Errorf("postgres: %s: %w: %w", op, store.ErrInvalid, err)
		case code == "3F000", code == "42P01", code == "42883": // no schema, table, function
			return fmt.Errorf("postgres: %s: %w: the baton schema %q is missing or damaged: %w", op, store.ErrSchema, s.schema, err)
		}
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	// Everything else the driver returns is about the connection: refused,
	// reset or closed, a closed pool, timeouts, context errors.
	return unavailable(op, err)
}

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
// store.CheckSwap's error, which checks the name before anything else) and
// a token that does not fit in a bigint. The other rules of CheckSwap
// depend on the current record: the swap function applies them in the
// database and swapResult reports them with CheckSwap itself.
func precheck(sw store.Swap) error {
	if sw.Record.Name == "" {
		return store.CheckSwap(store.Record{}, sw)
	}
	if sw.Record.Token > math.MaxInt64 {
		return fmt.Errorf("%w: token %d of %q does not fit in a bigint", store.ErrInvalid, sw.Record.Token, sw.Record.Name)
	}
	return nil
}

func (s *Store) swapArgs(sw store.Swap) []any {
	r := sw.Record
	return []any{r.Name, sw.Expect, r.Holder, r.Incarnation, int64(r.Token), int64(r.Lease), r.Transfer, string(sw.Event)}
}

// swapResult turns a row of the swap function into the stored record or,
// when the swap was refused, into store.CheckSwap's error for the record
// the function compared against.
func swapResult(row pgx.Row, sw store.Swap) (store.Record, error) {
	// The compared record's columns are NULL when it does not exist.
	var (
		applied               bool
		holder, inc, transfer *string
		token, lease          *int64
		version               int64
		updated               *time.Time
	)
	if err := row.Scan(&applied, &holder, &inc, &token, &lease, &transfer, &version, &updated); err != nil {
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
	if err := store.CheckSwap(rec, sw); err != nil {
		return store.Record{}, err
	}
	return store.Record{}, fmt.Errorf("postgres: swap of %q refused by the database though store.CheckSwap accepts it against %+v: %w", sw.Record.Name, rec, store.ErrConflict)
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
	if err := precheck(sw); err != nil {
		return store.Record{}, err
	}
	rec, err := swapResult(s.pool.QueryRow(ctx, s.sql.swap, s.swapArgs(sw)...), sw)
	if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrInvalid) {
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
		rec, err := swapResult(br.QueryRow(), swaps[i])
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
		if err := rows.Scan(&seq, &kind, &ev.Holder, &ev.Incarnation, &token, &ev.Transfer, &ev.Time); err != nil {
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
// checked with store.CheckRunSwap, and written.
func (s *Store) SwapRun(ctx context.Context, sw store.RunSwap) (store.Run, error) {
	if err := s.enter(ctx, "swap run"); err != nil {
		return store.Run{}, err
	}
	r := sw.Run
	// Request-only rules first (a current row at the expected version
	// passes the version rule; the fence is checked in the transaction).
	if err := store.CheckRunSwap(store.Run{Version: sw.Expect}, store.RunSwap{Expect: sw.Expect, Run: r}, 0); err != nil {
		return store.Run{}, err
	}
	if r.Token > math.MaxInt64 {
		return store.Run{}, fmt.Errorf("%w: token %d of run %s/%s does not fit in a bigint", store.ErrInvalid, r.Token, r.Job, r.Period)
	}
	var out store.Run
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
		if refused = store.CheckRunSwap(cur, sw, uint64(electionToken)); refused != nil {
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
				if refused = store.CheckRunSwap(cur, sw, uint64(electionToken)); refused == nil {
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
