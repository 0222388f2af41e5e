package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store/storeurl"
)

// runFenceCmd implements 'baton fence': the fence on the resource's side,
// for jobs in any language.
func runFenceCmd(ctx context.Context, e *env, args []string) int {
	const want = "want: baton fence install --db URL [--log], baton fence sql --dialect postgres|sqlite, or baton fence proxy --upstream URL"
	switch {
	case len(args) == 0:
		return e.fail("fence", usagef("missing the operation; %s", want))
	case args[0] == "install":
		return runFenceInstall(ctx, e, args[1:])
	case args[0] == "sql":
		return runFenceSQL(e, args[1:])
	case args[0] == "proxy":
		return runFenceProxy(ctx, e, args[1:])
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		fmt.Fprint(e.stdout, "Usage: baton fence install|sql|proxy [FLAGS]\n\n"+fenceAbout+"\n\nRun 'baton fence OPERATION --help' for its flags.\n")
		return exitOK
	}
	return e.fail("fence", usagef("unknown fence operation %q%s; %s", args[0], didYouMean(args[0], []string{"install", "sql", "proxy"}), want))
}

const fenceAbout = "The fence checks BATON_TOKEN where the work lands, in the same transaction,\n" +
	"so that a deposed leader's late work is refused whatever language the job is\n" +
	"written in. install puts the SQL function baton_fence(name, token[, sig[, period]])\n" +
	"into a PostgreSQL database (with --log, it keeps the fence log baton verify\n" +
	"reads); sql prints the DDL (PostgreSQL) or the table and\n" +
	"statements (SQLite) for review or migrations; proxy is an HTTP reverse proxy\n" +
	"in front of any HTTP resource that forwards a request only with a current\n" +
	"Baton-Token (409 for a stale one, 403 for a bad signature)."

// runFenceInstall implements 'baton fence install'.
func runFenceInstall(ctx context.Context, e *env, args []string) int {
	const synopsis = "fence install --db URL [--grant ROLE]... [--schema S] [--key-file F] [--log]\n\n" +
		"Installs the SQL fence in the PostgreSQL database at URL, in one transaction:\n" +
		"the table baton_fence (the one Go's pgfence and fence.CheckTx use; an existing\n" +
		"one is kept with its tokens) and the function\n\n" +
		"  baton_fence(name text, token bigint, sig text DEFAULT NULL,\n" +
		"              period text DEFAULT NULL) RETURNS bigint\n\n" +
		"which, called in the job's transaction (SELECT baton_fence($BATON_NAME,\n" +
		"$BATON_TOKEN, $BATON_TOKEN_SIG, $BATON_PERIOD)), raises the name's token to\n" +
		"token, or raises SQLSTATE " + pgfence.SQLStateStale + " (stale token: a newer leader wrote; roll\n" +
		"back), " + pgfence.SQLStateBadSignature + " (bad signature) or " + pgfence.SQLStateInvalid + " (empty name, token below 1). A\n" +
		"second install is a no-op and says so; a schema holding a baton_fence table\n" +
		"or function of another shape is refused and left unchanged. A fence of an\n" +
		"older version is upgraded in place, its tokens, key and grants kept; calls\n" +
		"with the old arguments keep working.\n\n" +
		"With --log, the function keeps the fence log that baton verify --fence-db\n" +
		"reads: every call it accepts adds a row (name, token, period) to the table\n" +
		"baton_fence_log, in the job's transaction, so a rolled-back write logs\n" +
		"nothing. Pass $BATON_PERIOD as the fourth argument: verify judges each\n" +
		"period by it. Only the function (its owner) writes the table; no role is\n" +
		"granted a right on it. A log once kept is kept.\n\n" +
		"Who may call it: the function runs as its owner (the role of --db), so only\n" +
		"the owner, superusers and the roles named with --grant may execute it; every\n" +
		"other role gets permission denied. Grant the role each fenced job connects as\n" +
		"(DATABASE_URL's user): --grant billing_job, repeatable; the job needs no right\n" +
		"on the table baton_fence itself, and must not have one (UPDATE on it moves the\n" +
		"fence without any check). Run install again over an existing fence to grant\n" +
		"more roles; over an older install, which let every role (PUBLIC) call it,\n" +
		"install revokes that and says so.\n\n" +
		"With --key-file (the key of baton run --fence-key-file), the function accepts\n" +
		"only tokens signed by it: pass $BATON_TOKEN_SIG as sig. The key is kept in\n" +
		"the table baton_fence_key, readable by its owner only (the function runs as\n" +
		"its owner); it needs the extension pgcrypto. Installing another key replaces it."
	fs := e.newFlagSet("fence install", synopsis)
	dbURL := fs.String("db", "", "the PostgreSQL database, as a URL (postgres://USER@HOST/DB) or a key=value string; the password may come from $PGPASSWORD (required)")
	schema := fs.String("schema", "public", "the schema to install into; the Go helpers find the table through the connection's search_path")
	keyFile := fs.String("key-file", "", "require tokens signed by the hex key in `PATH` (see baton run --fence-key-file)")
	logOn := fs.Bool("log", false, "keep the fence log baton_fence_log, which baton verify --fence-db reads")
	var grants []string
	fs.Func("grant", "let `ROLE` (the role a fenced job connects as) call baton_fence; repeatable", func(r string) error {
		grants = append(grants, r)
		return nil
	})
	if done, code := e.parseNoArgs("fence install", fs, args); done {
		return code
	}
	if *dbURL == "" {
		return e.fail("fence install", usagef("missing --db URL, the PostgreSQL database to install the fence into"))
	}
	e.secrets = append(e.secrets, storeurl.Secrets(*dbURL)...)
	if pw := os.Getenv("PGPASSWORD"); pw != "" {
		e.secrets = append(e.secrets, pw)
	}
	if *schema == "" {
		return e.fail("fence install", usagef("invalid --schema \"\"; want a schema name"))
	}
	for _, r := range grants {
		if r == "" || strings.EqualFold(r, "public") {
			return e.fail("fence install", usagef("invalid --grant %s: name the role a fenced job connects as (PUBLIC would let every role lock the leader out)", escape.String(strconv.Quote(r))))
		}
	}
	var key *fence.Key
	if *keyFile != "" {
		k, err := fence.ReadKeyFile(*keyFile)
		if err != nil {
			return e.fail("fence install", usagef("invalid --key-file: %v", err))
		}
		key = k
	}
	if u, err := url.Parse(*dbURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Query().Has("schema") {
		return e.fail("fence install", usagef("invalid --db %s: the schema parameter belongs to a baton store's URL; give the fence's schema with --schema", storeurl.Redact(*dbURL)))
	}
	cfg, err := pgx.ParseConfig(*dbURL)
	if err != nil {
		return e.fail("fence install", usagef("invalid --db %s: %v", storeurl.Redact(*dbURL), err))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return e.fail("fence install", fmt.Errorf("connecting to the database: %w", err))
	}
	defer conn.Close(context.Background())
	opts := []pgfence.Option{pgfence.WithSchema(*schema), pgfence.WithGrant(grants...)}
	if key != nil {
		opts = append(opts, pgfence.WithKey(key))
	}
	if *logOn {
		opts = append(opts, pgfence.WithLog())
	}
	res, err := pgfence.Install(ctx, conn, opts...)
	if errors.Is(err, pgfence.ErrForeign) || errors.Is(err, pgfence.ErrNoRole) {
		return e.fail("fence install", usagef("%v", err))
	}
	if err != nil {
		return e.fail("fence install", err)
	}
	where := "schema " + escape.String(strconv.Quote(res.Schema)) + " of database " + escape.String(strconv.Quote(cfg.Database))
	switch {
	case res.Created && res.TableExisted:
		fmt.Fprintf(e.stdout, "installed the SQL fence version %d in %s: function baton_fence(name, token[, sig[, period]]); the existing table baton_fence is kept with its tokens\n", pgfence.Version, where)
	case res.Created:
		fmt.Fprintf(e.stdout, "installed the SQL fence version %d in %s: function baton_fence(name, token[, sig[, period]]) and table baton_fence\n", pgfence.Version, where)
	case res.Upgraded != 0:
		fmt.Fprintf(e.stdout, "upgraded the SQL fence in %s from version %d to %d: baton_fence(name, token[, sig[, period]]) keeps its tokens, key and grants\n", where, res.Upgraded, pgfence.Version)
	case !res.KeyChanged && !res.LogChanged && !res.PublicRevoked && len(res.Granted) == 0:
		fmt.Fprintf(e.stdout, "%s has the SQL fence version %d already: nothing changed\n", where, pgfence.Version)
	}
	if res.PublicRevoked {
		fmt.Fprintf(e.stdout, "revoked EXECUTE on baton_fence from PUBLIC in %s: an older install let every role call it, and so lock the leader out with a high token\n", where)
	}
	for _, r := range res.Granted {
		fmt.Fprintf(e.stdout, "granted EXECUTE on baton_fence to role %s\n", escape.String(strconv.Quote(r)))
	}
	if len(grants) == 0 && (res.Created || res.PublicRevoked) {
		fmt.Fprintf(e.stdout, "only the owner (role %s) and superusers may call baton_fence: grant the role each fenced job connects as with --grant ROLE\n", escape.String(strconv.Quote(cfg.User)))
	}
	switch {
	case res.LogChanged:
		fmt.Fprintf(e.stdout, "fence log on in %s: baton_fence records every call it accepts in table baton_fence_log, which baton verify --fence-db reads; pass $BATON_PERIOD as its fourth argument\n", where)
	case !res.Logged && (res.Created || res.Upgraded != 0):
		fmt.Fprintln(e.stdout, "no fence log: baton verify cannot judge the periods of jobs fenced by baton_fence; keep one with baton fence install --log")
	}
	switch {
	case res.KeyChanged:
		fmt.Fprintf(e.stdout, "key installed in %s: baton_fence now accepts only tokens signed by it (pass $BATON_TOKEN_SIG as its third argument)\n", where)
	case res.Signed && key == nil:
		fmt.Fprintln(e.stdout, "a key is installed: baton_fence accepts only signed tokens (pass $BATON_TOKEN_SIG as its third argument)")
	}
	return exitOK
}

// runFenceSQL implements 'baton fence sql'.
func runFenceSQL(e *env, args []string) int {
	const synopsis = "fence sql --dialect postgres|sqlite [--schema S]\n\n" +
		"Prints the SQL of the fence, for review or for an application's migrations.\n" +
		"postgres: the DDL that 'baton fence install' runs (without the key, which only\n" +
		"install writes); with --log, the fence log's table too (install --log).\n" +
		"sqlite: the table that Go's fence.CheckTx uses, triggers that\n" +
		"refuse a stale token, and, as a comment, the statement to run first in every\n" +
		"fenced transaction. The output can be piped into psql -1 or sqlite3."
	fs := e.newFlagSet("fence sql", synopsis)
	dialect := fs.String("dialect", "", "postgres or sqlite (required)")
	schema := fs.String("schema", "public", "postgres only: the schema to create the fence in")
	logOn := fs.Bool("log", false, "postgres only: also the fence log that baton verify --fence-db reads (install --log)")
	if done, code := e.parseNoArgs("fence sql", fs, args); done {
		return code
	}
	switch *dialect {
	case "postgres":
		ddl, err := pgfence.InstallSQL(*schema)
		if err != nil {
			return e.fail("fence sql", usagef("invalid --schema: %v", err))
		}
		if *logOn {
			l, _ := pgfence.LogSQL(*schema)
			ddl += "\n-- The fence log: baton_fence records every call it accepts in baton_fence_log.\n\n" + l
		}
		fmt.Fprintf(e.stdout, "-- baton SQL fence version %d for PostgreSQL, schema %s: run in one transaction (psql -1).\n"+
			"-- In the job's transaction: SELECT baton_fence($BATON_NAME, $BATON_TOKEN [, $BATON_TOKEN_SIG [, $BATON_PERIOD]]);\n"+
			"-- SQLSTATE %s: stale token, roll back; %s: bad signature; %s: empty name or token below 1.\n"+
			"-- A key (signed tokens only) is installed by baton fence install --key-file.\n"+
			"-- Only the owner may call baton_fence: let each fenced job's role call it with\n"+
			"-- GRANT EXECUTE ON FUNCTION %s TO ROLE (and USAGE on the schema),\n"+
			"-- as baton fence install --grant ROLE does.\n\n%s",
			pgfence.Version, escape.String(strconv.Quote(*schema)), pgfence.SQLStateStale, pgfence.SQLStateBadSignature, pgfence.SQLStateInvalid,
			escape.String(pgx.Identifier{*schema}.Sanitize()+".baton_fence(text, bigint, text, text)"), ddl)
	case "sqlite":
		if flagsSet(fs)["schema"] {
			return e.fail("fence sql", usagef("--schema is for --dialect postgres; SQLite has no schemas (point sqlite3 at the database file)"))
		}
		if *logOn {
			return e.fail("fence sql", usagef("--log is for --dialect postgres; a SQLite fence keeps its log from Go (fence.Dialect.WithLog)"))
		}
		fmt.Fprintf(e.stdout, "-- baton fence for SQLite: run once (sqlite3 DB < this file; Python: executescript).\n%s\n"+
			"-- Then, first in every fenced transaction (BEGIN IMMEDIATE), with :name bound to\n"+
			"-- $BATON_NAME and :token to $BATON_TOKEN as an integer:\n--\n%s--\n"+
			"-- A stale token fails it with %q:\n"+
			"-- SQLite has rolled the transaction back; stop there (sqlite3 -bail; Python's\n"+
			"-- sqlite3 raises IntegrityError), since statements after it would run outside\n"+
			"-- any transaction.\n",
			fence.SQLiteDDL, commentLines(fence.SQLiteCheck), fence.SQLiteStaleMessage)
	case "":
		return e.fail("fence sql", usagef("missing --dialect; want postgres or sqlite"))
	default:
		return e.fail("fence sql", usagef("invalid --dialect %s; want postgres or sqlite", escape.String(strconv.Quote(*dialect))))
	}
	return exitOK
}

// commentLines prefixes every line of s with "-- ".
func commentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("-- " + l + "\n")
	}
	return b.String()
}
