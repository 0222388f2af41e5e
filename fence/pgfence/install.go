package pgfence

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/internal/bound"
)

// Version is the version of the SQL fence that InstallSQL writes and
// Install installs, recorded in the schema's baton_fence_meta table (key
// 'version'). Install upgrades a fence of an older version in place
// (version 1 had no period argument and no log), and refuses a schema
// whose recorded version it does not know, changing nothing.
const Version = 2

// The SQLSTATEs the SQL function baton_fence raises, in a class of their
// own ("BF") that PostgreSQL does not use. Classify maps them to package
// fence's errors.
const (
	// SQLStateStale: the token is below the highest accepted for the
	// name; a newer leader wrote. The transaction is aborted: roll back.
	SQLStateStale = "BF001"
	// SQLStateBadSignature: a key is installed and the signature is
	// missing, malformed or not the key's for (name, token). Nothing moved.
	SQLStateBadSignature = "BF002"
	// SQLStateInvalid: an empty or NULL name, or a token that is NULL or
	// below 1. Nothing moved.
	SQLStateInvalid = "BF003"
)

// ErrForeign is returned by Install when the schema holds a baton_fence
// table, function or companion table that Install did not make (other
// columns, no version record, an unknown version). Install changed nothing.
var ErrForeign = errors.New("pgfence: the schema holds baton_fence objects that are not this baton's fence")

// ErrNoRole is returned by Install when a role of WithGrant
// does not exist. Install changed nothing.
var ErrNoRole = errors.New("role does not exist")

// Classify returns err wrapped so that errors.Is matches package fence's
// error for a SQLSTATE of the function baton_fence: fence.ErrStaleToken
// for SQLStateStale, fence.ErrBadSignature for SQLStateBadSignature,
// fence.ErrInvalidToken for SQLStateInvalid. Any other error, and nil, is
// returned unchanged. Use it on the error of a statement that calls
// baton_fence from Go.
func Classify(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case SQLStateStale:
		return fmt.Errorf("%w: %w", fence.ErrStaleToken, err)
	case SQLStateBadSignature:
		return fmt.Errorf("%w: %w", fence.ErrBadSignature, err)
	case SQLStateInvalid:
		return fmt.Errorf("%w: %w", fence.ErrInvalidToken, err)
	}
	return err
}

// checkSchema refuses a schema name PostgreSQL cannot hold.
func checkSchema(schema string) error {
	if schema == "" || len(schema) > 63 || strings.ContainsRune(schema, 0) {
		return fmt.Errorf("pgfence: %w", bound.Errorf("schema", strconv.Quote(schema), "a schema name of 1 to 63 bytes, no NUL"))
	}
	return nil
}

// ddl returns the statements of version Version in schema (quoted as q).
// The fence table is the one Check and fence.Postgres use, created only if
// missing, so that an existing one (made by CreateTable) is kept.
func ddl(q string) []string {
	return append(append([]string{
		`CREATE SCHEMA IF NOT EXISTS ` + q,
		`CREATE TABLE IF NOT EXISTS ` + q + `.` + DefaultTable + ` (name TEXT PRIMARY KEY, token BIGINT NOT NULL)`,
		`CREATE TABLE ` + q + `.baton_fence_meta (key text PRIMARY KEY, value text NOT NULL)`,
		`CREATE TABLE ` + q + `.baton_fence_key (
	id     int PRIMARY KEY CHECK (id = 1),
	secret bytea NOT NULL CHECK (octet_length(secret) >= ` + strconv.Itoa(fence.MinKeyLen) + `))`,
		`REVOKE ALL ON ` + q + `.baton_fence_key FROM PUBLIC`,
	}, funcDDL(q)...),
		`INSERT INTO `+q+`.baton_fence_meta (key, value) VALUES ('version', '`+strconv.Itoa(Version)+`')`)
}

// logTable is the fence log table of schema q.
func logTable(q string) string { return q + `.` + fence.DefaultLogTable }

// funcDDL returns the statements that create the function baton_fence of
// version Version in schema q, with PUBLIC's EXECUTE revoked.
func funcDDL(q string) []string {
	return []string{
		`CREATE FUNCTION ` + q + `.baton_fence(p_name text, p_token bigint, p_sig text DEFAULT NULL, p_period text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	k       bytea;
	msg     bytea;
	highest bigint;
BEGIN
	IF p_name IS NULL OR p_name = '' THEN
		RAISE EXCEPTION 'baton_fence: empty name' USING ERRCODE = '` + SQLStateInvalid + `',
			HINT = 'pass the election name, $BATON_NAME';
	END IF;
	IF p_token IS NULL OR p_token < 1 THEN
		RAISE EXCEPTION 'baton_fence: invalid token % for %', coalesce(p_token::text, 'NULL'), quote_literal(p_name)
			USING ERRCODE = '` + SQLStateInvalid + `', HINT = 'pass the fencing token, $BATON_TOKEN; election tokens start at 1';
	END IF;
	SELECT secret INTO k FROM ` + q + `.baton_fence_key WHERE id = 1;
	IF k IS NOT NULL THEN
		IF p_sig IS NULL OR p_sig !~ '^[0-9a-fA-F]{64}$' THEN
			RAISE EXCEPTION 'baton_fence: token % for % carries no valid signature', p_token, quote_literal(p_name)
				USING ERRCODE = '` + SQLStateBadSignature + `', HINT = 'this fence holds a key: pass $BATON_TOKEN_SIG as the third argument';
		END IF;
		msg := int8send(octet_length(convert_to(p_name, 'UTF8'))::bigint) || convert_to(p_name, 'UTF8') || int8send(p_token);
		-- Compared under a second HMAC, so that the time taken tells
		-- nothing about how much of a forged signature matched.
		IF ` + q + `.baton_fence_hmac(` + q + `.baton_fence_hmac(msg, k), k)
				<> ` + q + `.baton_fence_hmac(decode(p_sig, 'hex'), k) THEN
			RAISE EXCEPTION 'baton_fence: token % for % is not signed by this fence''s key', p_token, quote_literal(p_name)
				USING ERRCODE = '` + SQLStateBadSignature + `';
		END IF;
	END IF;
	INSERT INTO ` + q + `.` + DefaultTable + ` AS f (name, token) VALUES (p_name, p_token)
		ON CONFLICT (name) DO UPDATE SET token = excluded.token WHERE f.token <= excluded.token;
	IF FOUND THEN
		-- The fence log, if Install made one: in the caller's
		-- transaction, while the name's row is locked, so that a
		-- rolled-back write logs nothing and the rows of one name are
		-- in the order the fence accepted them.
		IF EXISTS (SELECT 1 FROM ` + q + `.baton_fence_meta WHERE key = 'log') THEN
			INSERT INTO ` + logTable(q) + ` (name, token, period, outcome, highest, at_ns)
			VALUES (p_name, p_token, coalesce(p_period, ''), '` + fence.Accepted + `', p_token,
				(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint);
		END IF;
		RETURN p_token;
	END IF;
	SELECT f.token INTO highest FROM ` + q + `.` + DefaultTable + ` f WHERE f.name = p_name;
	RAISE EXCEPTION 'baton_fence: stale token % for %: the fence has accepted token %', p_token, quote_literal(p_name), highest
		USING ERRCODE = '` + SQLStateStale + `',
			DETAIL = 'a newer leader has written under a higher token',
			HINT = 'roll the transaction back: none of its work may commit';
END
$fn$`,
		// In the transaction that creates it: PostgreSQL lets PUBLIC
		// execute a new function, and this one runs as its owner.
		`REVOKE ALL ON FUNCTION ` + fenceFunc(q) + ` FROM PUBLIC`,
		`COMMENT ON FUNCTION ` + fenceFunc(q) + ` IS
'baton fence version ` + strconv.Itoa(Version) + `: accepts (name, token[, signature[, period]]) if token is at least the highest accepted for name, raising it in the caller''s transaction, and logs it with period in baton_fence_log if the fence keeps a log; raises SQLSTATE ` +
			SQLStateStale + ` (stale), ` + SQLStateBadSignature + ` (bad signature), ` + SQLStateInvalid + ` (invalid input)'`,
	}
}

// logDDL returns the statements that make the fence of schema q keep its
// log: the table fence.DefaultLogTable (the Go fence's, created only if
// missing), readable and writable by its owner only, and the row ('log',
// table) in baton_fence_meta that turns the function's logging on.
func logDDL(q string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + logTable(q) + ` (seq BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, token BIGINT NOT NULL,` +
			` period TEXT NOT NULL, outcome TEXT NOT NULL, highest BIGINT NOT NULL, at_ns BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + fence.DefaultLogTable + `_name ON ` + logTable(q) + ` (name, seq)`,
		`REVOKE ALL ON ` + logTable(q) + ` FROM PUBLIC`,
		`INSERT INTO ` + q + `.baton_fence_meta (key, value) VALUES ('log', '` + fence.DefaultLogTable + `') ON CONFLICT (key) DO NOTHING`,
	}
}

// InstallSQL returns the DDL of the SQL fence in schema, as Install runs
// it when the schema has no fence yet, one statement after another, each
// ended by a semicolon and a blank line, for review or for an
// application's migrations. Run it in one transaction. It makes:
//
//   - the table baton_fence (name TEXT PRIMARY KEY, token BIGINT NOT
//     NULL), the one Check, CheckSigned and fence.Postgres use, if it does
//     not exist; an existing one is kept with its tokens;
//   - baton_fence_meta, holding the row ('version', Version);
//   - baton_fence_key, where Install puts the key (readable by the owner
//     only: PUBLIC's rights are revoked);
//   - the function baton_fence(name text, token bigint, sig text DEFAULT
//     NULL, period text DEFAULT NULL) RETURNS bigint, SECURITY DEFINER,
//     which does what Check does, in the caller's transaction, and raises
//     SQLStateStale, SQLStateBadSignature or SQLStateInvalid. It returns
//     token. If the fence keeps a log (LogSQL), it also appends an
//     "accepted" row with period ("" for NULL) to it, as CheckLogged
//     does, in the caller's transaction. Its
//     search_path is pinned to pg_catalog, pg_temp and every other name
//     in it is schema-qualified, so that nothing a caller puts on its own
//     search_path runs as the function's owner; PUBLIC's EXECUTE is
//     revoked in the same transaction, so only the owner, superusers and
//     the roles granted EXECUTE may call it. Grant it to the roles the
//     fenced jobs connect as: GRANT EXECUTE ON FUNCTION
//     schema.baton_fence(text, bigint, text, text) TO role (and USAGE on
//     the schema), as Install does for WithGrant.
//
// The key is not part of it (a migration file must not hold the secret):
// Install writes it, and the helper function baton_fence_hmac that calls
// pgcrypto's hmac(), whose schema only the database knows.
func InstallSQL(schema string) (string, error) {
	if err := checkSchema(schema); err != nil {
		return "", err
	}
	return strings.Join(ddl(pgx.Identifier{schema}.Sanitize()), ";\n\n") + ";\n", nil
}

// LogSQL returns the DDL that makes the SQL fence of schema (InstallSQL)
// keep its fence log, as Install runs it for WithLog: the table
// fence.DefaultLogTable in schema (the Go fence's log table, kept if it
// exists), on which PUBLIC's rights are revoked, so that only its owner,
// through the function, writes it; and the row ('log', table) in
// baton_fence_meta, which makes the function log every call it accepts.
// Run it after InstallSQL, in one transaction, as the function's owner.
func LogSQL(schema string) (string, error) {
	if err := checkSchema(schema); err != nil {
		return "", err
	}
	return strings.Join(logDDL(pgx.Identifier{schema}.Sanitize()), ";\n\n") + ";\n", nil
}

// Beginner starts a transaction: *pgx.Conn and *pgxpool.Pool are
// Beginners.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Option configures Install. Like every option of baton's public
// packages, an invalid value makes Install fail, before it connects, with
// an error wrapping *baton.OptionError naming the option; nothing is
// installed. Without options Install puts the fence in schema "public",
// unsigned, granted to no role but its owner, with no fence log.
type Option func(*config) error

// config is Install's settings.
type config struct {
	schema string
	key    *fence.Key
	grant  []string
	log    bool
}

// WithSchema installs the fence in schema instead of "public". Check and
// fence.Postgres resolve baton_fence through the connection's
// search_path: put schema on it for them to use the same table.
func WithSchema(schema string) Option {
	return func(c *config) error {
		if err := checkSchema(schema); err != nil {
			return err
		}
		c.schema = schema
		return nil
	}
}

// WithKey makes the function accept only tokens signed by k (the third
// argument, $BATON_TOKEN_SIG). It needs the extension pgcrypto, which
// Install creates if the server has it and the user may; an existing key
// is replaced. Without WithKey the key stays as it is: none on a new
// install.
func WithKey(k *fence.Key) Option {
	return func(c *config) error {
		if k == nil {
			return bound.Errorf("key", "nil", "a key from fence.NewKey or fence.ReadKeyFile")
		}
		c.key = k
		return nil
	}
}

// WithGrant names roles that may call baton_fence: the roles the fenced
// jobs connect as (each WithGrant adds to the list). Install grants each
// EXECUTE on the function (and USAGE on the schema if it lacks it); every
// other role, except the owner and superusers, is refused with permission
// denied (SQLSTATE 42501), whatever was granted, because PUBLIC's EXECUTE
// is revoked. A role must exist (else ErrNoRole); "public" is refused.
// Grants made before are kept: Install never revokes a role's.
func WithGrant(roles ...string) Option {
	return func(c *config) error {
		for _, r := range roles {
			if err := checkRole(r); err != nil {
				return err
			}
		}
		c.grant = append(c.grant, roles...)
		return nil
	}
}

// WithLog makes the function keep the fence log (LogSQL) that `baton
// verify --fence-db` reads: one "accepted" row per accepted call, with the
// period of its fourth argument, in the caller's transaction. Only the
// owner writes the table, through the function: no role is granted a
// right on it. Without WithLog the log stays as it is: none on a new
// install; a log once kept is kept (its table made again if it was
// dropped).
func WithLog() Option {
	return func(c *config) error {
		c.log = true
		return nil
	}
}

// InstallResult says what Install found and did.
type InstallResult struct {
	Schema string // the schema, as given or "public"
	// Created is true when Install created the fence now, false when
	// version Version was installed already.
	Created bool
	// TableExisted is true when Created and the baton_fence table existed
	// before (made by CreateTable or fence.CreateTable): it was kept.
	TableExisted bool
	// Upgraded is the version Install upgraded in place to Version (the
	// roles that could call the old function can call the new one), 0
	// when it upgraded none.
	Upgraded int
	// KeyChanged is true when Install wrote a key that was not installed.
	KeyChanged bool
	// LogChanged is true when Install turned the fence log on; Logged
	// is true when the fence keeps a log, after Install.
	LogChanged, Logged bool
	// Signed is true when a key is installed, after Install.
	Signed bool
	// PublicRevoked is true when the fence was installed already and
	// PUBLIC could call baton_fence (an install by a baton before
	// PUBLIC's EXECUTE was revoked): Install revoked it.
	PublicRevoked bool
	// Granted lists the roles of WithGrant that could not call
	// baton_fence before and can now.
	Granted []string
}

// Install installs the SQL fence (see InstallSQL) in its schema (WithSchema), in one
// transaction under an advisory lock, so that installs at the same time do
// not race, and grants EXECUTE on baton_fence to the roles of WithGrant.
// Installing again changes nothing that is in place (Created and
// KeyChanged false, Granted empty), but revokes PUBLIC's EXECUTE that an
// older install left (PublicRevoked). A fence of an older version is
// upgraded in place (Upgraded): its tokens, key and the grants of its
// function are kept, and calls with the old arguments keep working. A
// schema holding a baton_fence table with other columns, or a function or
// table of the fence without a version record Install knows, is refused
// with an error wrapping ErrForeign, and nothing is changed. With
// WithKey, a server without pgcrypto is refused with an error naming the
// fix, and nothing is changed.
func Install(ctx context.Context, db Beginner, opts ...Option) (InstallResult, error) {
	c := config{schema: "public"}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return InstallResult{Schema: c.schema}, err
		}
	}
	schema := c.schema
	res := InstallResult{Schema: schema}
	q := pgx.Identifier{schema}.Sanitize()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema)); err != nil {
			return err
		}
		version, tableExists, err := inspect(ctx, tx, schema, q)
		if err != nil {
			return err
		}
		var publicBefore bool
		switch version {
		case 0:
			for _, stmt := range ddl(q) {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("pgfence: Install: %w", err)
				}
			}
			res.Created, res.TableExisted = true, tableExists
		case 1:
			if publicBefore, err = upgrade1(ctx, tx, q); err != nil {
				return err
			}
			res.Upgraded = 1
		}
		// A log once kept is kept, and its table made again if it was
		// dropped: the function would fail every accepted call without it.
		var logOn bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+q+`.baton_fence_meta WHERE key = 'log')`).Scan(&logOn); err != nil {
			return fmt.Errorf("pgfence: Install: %w", err)
		}
		if c.log || logOn {
			if res.LogChanged, err = installLog(ctx, tx, schema, q); err != nil {
				return err
			}
		}
		if c.key != nil {
			changed, err := installKey(ctx, tx, q, c.key)
			if err != nil {
				return err
			}
			res.KeyChanged = changed
		}
		if res.PublicRevoked, err = revokePublic(ctx, tx, q); err != nil {
			return err
		}
		res.PublicRevoked = (res.PublicRevoked || publicBefore) && !res.Created
		if res.Granted, err = grant(ctx, tx, schema, q, c.grant); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+q+`.baton_fence_key),
			EXISTS (SELECT 1 FROM `+q+`.baton_fence_meta WHERE key = 'log')`).Scan(&res.Signed, &res.Logged)
	})
	if err != nil {
		return InstallResult{Schema: schema}, err
	}
	return res, nil
}

// fenceFunc is the signature of the function baton_fence in schema q.
func fenceFunc(q string) string { return q + `.baton_fence(text, bigint, text, text)` }

// upgrade1 upgrades version 1 of the fence in schema q to Version: the
// function gains the argument period and the log, so it is dropped and
// created again, and the roles that could execute the old one are granted
// the new one. It reports whether PUBLIC could execute the old one (the
// new one revokes it).
func upgrade1(ctx context.Context, tx pgx.Tx, q string) (public bool, err error) {
	old := q + `.baton_fence(text, bigint, text)`
	var roles []string
	err = tx.QueryRow(ctx, `SELECT has_function_privilege('public', p.oid, 'EXECUTE'),
		coalesce((SELECT array_agg(DISTINCT a.grantee::regrole::text) FROM aclexplode(p.proacl) a
		          WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner), '{}')
		FROM pg_proc p WHERE p.oid = $1::text::regprocedure`, old).Scan(&public, &roles)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: upgrade from version 1: %w", err)
	}
	stmts := append([]string{`DROP FUNCTION ` + old}, funcDDL(q)...)
	for _, r := range roles { // regrole's text is quoted as an identifier
		stmts = append(stmts, `GRANT EXECUTE ON FUNCTION `+fenceFunc(q)+` TO `+r)
	}
	stmts = append(stmts, `UPDATE `+q+`.baton_fence_meta SET value = '`+strconv.Itoa(Version)+`' WHERE key = 'version'`)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return false, fmt.Errorf("pgfence: Install: upgrade from version 1: %w", err)
		}
	}
	return public, nil
}

// logColumns are the columns of the fence log table, as checkColumns
// reads them.
var logColumns = []string{"seq bigint not null", "name text not null", "token bigint not null", "period text not null",
	"outcome text not null", "highest bigint not null", "at_ns bigint not null"}

// installLog makes the fence of schema (quoted as q) keep its log,
// reporting whether it did not before. An existing log table (the Go
// fence's) is kept if it has the log's columns; the function's owner must
// be able to write it.
func installLog(ctx context.Context, tx pgx.Tx, schema, q string) (bool, error) {
	var exists, on bool
	err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM `+q+`.baton_fence_meta WHERE key = 'log')`,
		logTable(q)).Scan(&exists, &on)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if exists {
		if err := checkColumns(ctx, tx, logTable(q), fence.DefaultLogTable, logColumns, "seq"); err != nil {
			return false, fmt.Errorf("%w: schema %q: %v; baton changed nothing: install into another schema (--schema)", ErrForeign, schema, err)
		}
	}
	for _, s := range logDDL(q) {
		if _, err := tx.Exec(ctx, s); err != nil {
			return false, fmt.Errorf("pgfence: Install: the fence log: %w", err)
		}
	}
	var ok bool
	var owner string
	err = tx.QueryRow(ctx, `SELECT has_table_privilege(p.proowner, $2::text::regclass, 'INSERT')
		AND has_sequence_privilege(p.proowner, pg_get_serial_sequence($2, 'seq'), 'USAGE'), p.proowner::regrole::text
		FROM pg_proc p WHERE p.oid = $1::text::regprocedure`, fenceFunc(q), logTable(q)).Scan(&ok, &owner)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if !ok {
		return false, fmt.Errorf("pgfence: Install: the owner of baton_fence (role %s) cannot write the existing table %s: grant it INSERT on the table and USAGE on its sequence, or install as the table's owner; nothing was installed", owner, fence.DefaultLogTable)
	}
	return !on, nil
}

// checkRole refuses a role name that WithGrant cannot take.
func checkRole(role string) error {
	switch {
	case role == "" || len(role) > 63 || strings.ContainsRune(role, 0):
		return fmt.Errorf("pgfence: %w", bound.Errorf("grant", strconv.Quote(role), "a role name of 1 to 63 bytes, no NUL"))
	case strings.EqualFold(role, "public"):
		return fmt.Errorf("pgfence: %w", bound.Errorf("grant", role, "the roles the fenced jobs connect as, not PUBLIC: every role could then lock the leader out with a high token"))
	}
	return nil
}

// revokePublic revokes PUBLIC's EXECUTE on the fence's functions,
// reporting whether PUBLIC could call baton_fence before.
func revokePublic(ctx context.Context, tx pgx.Tx, q string) (bool, error) {
	var public, hmac bool
	err := tx.QueryRow(ctx, `SELECT has_function_privilege('public', $1::text::regprocedure, 'EXECUTE'),
		to_regprocedure($2) IS NOT NULL`, fenceFunc(q), q+`.baton_fence_hmac(bytea, bytea)`).Scan(&public, &hmac)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	stmts := []string{`REVOKE ALL ON FUNCTION ` + fenceFunc(q) + ` FROM PUBLIC`}
	if hmac {
		stmts = append(stmts, `REVOKE ALL ON FUNCTION `+q+`.baton_fence_hmac(bytea, bytea) FROM PUBLIC`)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return false, fmt.Errorf("pgfence: Install: %s: %w", s, err)
		}
	}
	// A role that does not own the function gets a warning, not an
	// error, and PUBLIC keeps its right.
	var still bool
	var owner string
	err = tx.QueryRow(ctx, `SELECT has_function_privilege('public', $1::text::regprocedure, 'EXECUTE'),
		(SELECT proowner::regrole::text FROM pg_proc WHERE oid = $1::text::regprocedure)`, fenceFunc(q)).Scan(&still, &owner)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if still {
		return false, fmt.Errorf("pgfence: Install: cannot revoke PUBLIC's EXECUTE on baton_fence, which every role can call: only its owner can; run the install as role %s", owner)
	}
	return public, nil
}

// grant lets each of roles call baton_fence in schema (quoted as q), and
// returns those that could not before.
func grant(ctx context.Context, tx pgx.Tx, schema, q string, roles []string) ([]string, error) {
	var granted []string
	for _, r := range roles {
		var exists, usage, execute bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, r).Scan(&exists)
		if err != nil {
			return nil, fmt.Errorf("pgfence: Install: %w", err)
		}
		if !exists {
			return nil, fmt.Errorf("pgfence: Install: grant to %q: %w: create the role the fenced job connects as first (CREATE ROLE %s LOGIN), or name another; nothing was installed", r, ErrNoRole, pgx.Identifier{r}.Sanitize())
		}
		err = tx.QueryRow(ctx, `SELECT has_schema_privilege($1, $2, 'USAGE'), has_function_privilege($1, $3::text::regprocedure, 'EXECUTE')`,
			r, schema, fenceFunc(q)).Scan(&usage, &execute)
		if err != nil {
			return nil, fmt.Errorf("pgfence: Install: %w", err)
		}
		rq := pgx.Identifier{r}.Sanitize()
		stmts := []string{`GRANT EXECUTE ON FUNCTION ` + fenceFunc(q) + ` TO ` + rq}
		if !usage {
			stmts = append(stmts, `GRANT USAGE ON SCHEMA `+q+` TO `+rq)
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return nil, fmt.Errorf("pgfence: Install: %s: %w", s, err)
			}
		}
		var ok bool
		err = tx.QueryRow(ctx, `SELECT has_schema_privilege($1, $2, 'USAGE') AND has_function_privilege($1, $3::text::regprocedure, 'EXECUTE')`,
			r, schema, fenceFunc(q)).Scan(&ok)
		if err != nil {
			return nil, fmt.Errorf("pgfence: Install: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("pgfence: Install: could not grant role %q the right to call baton_fence (a role that owns neither the function nor the schema can grant nothing): run the install as their owner; nothing was installed", r)
		}
		if !usage || !execute {
			granted = append(granted, r)
		}
	}
	return granted, nil
}

// lockKey is the advisory lock key that serialises installs in one schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("baton fence " + schema))
	return int64(h.Sum64())
}

// inspect reports the version of the fence schema holds (0: none), and
// whether its baton_fence table exists; anything of the fence's names
// that Install did not make is an error wrapping ErrForeign.
func inspect(ctx context.Context, tx pgx.Tx, schema, q string) (version int, tableExists bool, err error) {
	foreign := func(format string, a ...any) error {
		return fmt.Errorf("%w: schema %q: %s; baton changed nothing: install into another schema (--schema)", ErrForeign, schema, fmt.Sprintf(format, a...))
	}
	var (
		table, meta, key bool
		funcs            int
	)
	err = tx.QueryRow(ctx, `
		SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass($3) IS NOT NULL,
		       (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		        WHERE n.nspname = $4 AND p.proname = 'baton_fence')`,
		q+"."+DefaultTable, q+".baton_fence_meta", q+".baton_fence_key", schema).Scan(&table, &meta, &key, &funcs)
	if err != nil {
		return 0, false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if table {
		if err := checkColumns(ctx, tx, q+"."+DefaultTable, DefaultTable, []string{"name text not null", "token bigint not null"}, "name"); err != nil {
			return 0, false, foreign("%v", err)
		}
	}
	if !meta {
		if key || funcs > 0 {
			return 0, false, foreign("a baton_fence function or baton_fence_key table without baton_fence_meta")
		}
		return 0, table, nil
	}
	var v string
	err = tx.QueryRow(ctx, `SELECT value FROM `+q+`.baton_fence_meta WHERE key = 'version'`).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, foreign("baton_fence_meta has no version")
	case err != nil:
		return 0, false, foreign("baton_fence_meta is not baton's (%v)", err)
	case v != "1" && v != strconv.Itoa(Version):
		return 0, false, foreign("fence version %q, this baton knows versions 1 to %d", v, Version)
	case !table || !key || funcs != 1:
		return 0, false, foreign("fence version %s is incomplete (table %v, key table %v, %d baton_fence functions)", v, table, key, funcs)
	}
	var sig string // the function's arguments, as the version made them
	want := map[string]string{"1": "text, bigint, text", strconv.Itoa(Version): "text, bigint, text, text"}[v]
	err = tx.QueryRow(ctx, `SELECT pg_get_function_identity_arguments(p.oid)::text FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = 'baton_fence'`, schema).Scan(&sig)
	if err != nil {
		return 0, false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if strings.ReplaceAll(stripArgNames(sig), " ", "") != strings.ReplaceAll(want, " ", "") {
		return 0, false, foreign("fence version %s has the function baton_fence(%s), want baton_fence(%s)", v, sig, want)
	}
	n, _ := strconv.Atoi(v)
	return n, true, nil
}

// stripArgNames turns "p_name text, p_token bigint" into "text, bigint".
func stripArgNames(args string) string {
	var types []string
	for _, a := range strings.Split(args, ",") {
		f := strings.Fields(a)
		if len(f) > 1 {
			f = f[1:]
		}
		types = append(types, strings.Join(f, " "))
	}
	return strings.Join(types, ", ")
}

// checkColumns returns an error unless the table qualified (shown as
// name) has the columns want and the primary key pk.
func checkColumns(ctx context.Context, tx pgx.Tx, qualified, name string, want []string, pk string) error {
	var cols, keys []string
	err := tx.QueryRow(ctx, `
		SELECT (SELECT array_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ORDER BY a.attnum)
		        FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
		       coalesce((SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_index i
		        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		        WHERE i.indrelid = c.oid AND i.indisprimary), '{}')
		FROM pg_class c WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, qualified).Scan(&cols, &keys)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s is not a table", name)
	}
	if err != nil {
		return err
	}
	if strings.Join(cols, ", ") != strings.Join(want, ", ") || len(keys) != 1 || keys[0] != pk {
		return fmt.Errorf("table %s has columns (%s) and primary key (%s), want (%s) and (%s)",
			name, strings.Join(cols, ", "), strings.Join(keys, ", "), strings.Join(want, ", "), pk)
	}
	return nil
}

// installKey creates pgcrypto if needed, the helper baton_fence_hmac that
// calls its hmac(), and writes k, reporting whether the key changed.
func installKey(ctx context.Context, tx pgx.Tx, q string, k *fence.Key) (bool, error) {
	var available, have bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pgcrypto'),
		EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pgcrypto')`).Scan(&available, &have)
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	if !have && !available {
		return false, errors.New("pgfence: Install: a key needs the extension pgcrypto (its hmac()), which this PostgreSQL server does not have: install the server's contrib modules, or install without a key and have the Go side check signatures")
	}
	if !have {
		if _, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgcrypto`); err != nil {
			return false, fmt.Errorf("pgfence: Install: a key needs the extension pgcrypto: CREATE EXTENSION pgcrypto: %w (ask the database owner or a superuser to run it)", err)
		}
	}
	var cq string
	if err := tx.QueryRow(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pgcrypto'`).Scan(&cq); err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	stmts := []string{
		`CREATE OR REPLACE FUNCTION ` + q + `.baton_fence_hmac(msg bytea, k bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT ` + cq + `.hmac(msg, k, 'sha256'::text) $fn$`,
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return false, fmt.Errorf("pgfence: Install: %w", err)
		}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO `+q+`.baton_fence_key AS k (id, secret) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET secret = excluded.secret WHERE k.secret <> excluded.secret`, k.Secret())
	if err != nil {
		return false, fmt.Errorf("pgfence: Install: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
