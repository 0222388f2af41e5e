package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
)

// SchemaVersion is the version of the tables this package reads and
// writes. It is recorded in the schema's meta table when the tables are
// created; a store whose recorded version differs is refused with
// store.ErrSchema and left untouched. Version 2 added the election log's
// detail column and the candidates table; a version 1 schema is upgraded in
// place when a writer opens it, and read as it is by a read-only opener.
const SchemaVersion = 2

// ddl returns the statements that create schema version 1 in schema q (a
// quoted identifier), with notifications on channel.
//
// Tables:
//   - meta: key/value; key 'schema_version' holds SchemaVersion, key
//     'store_id' the store's id, a random UUID made when it was created.
//   - election: one row per name (store.Record); lease in nanoseconds.
//   - election_log: (name, seq) → store.Event; seq = previous max + 1,
//     written by swap() while it holds the record's row lock.
//   - jobs: store.Job.
//   - runs: (job, period) → store.Run; zero times are NULL, output is bytea
//     so that any bytes a command printed round-trip.
//
// Versions of both records and runs come from one sequence, so a version is
// never reused. Key columns use the "C" collation so that text orders byte
// by byte, as Go strings do (Runs pages by period key).
//
// swap() is the whole of a record compare-and-swap, so that a renewal is
// one statement and one round trip: it locks the record, applies the write
// only if the version matches, the token does not go back and a free record
// has no incarnation (the rules of storedriver.CheckSwap), appends the
// log event and notifies, and returns whether it applied together with the
// record it compared against (or the new one). The Go side builds the
// refusal error from that record with storedriver.CheckSwap.
func ddl(q, channel string) []string {
	return []string{
		`CREATE SCHEMA IF NOT EXISTS ` + q,
		`CREATE TABLE ` + q + `.meta (
			key   text COLLATE "C" PRIMARY KEY,
			value text NOT NULL)`,
		`CREATE SEQUENCE ` + q + `.version_seq AS bigint MINVALUE 1`,
		`CREATE TABLE ` + q + `.election (
			name        text COLLATE "C" PRIMARY KEY,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL CHECK (token >= 0),
			lease_ns    bigint NOT NULL,
			transfer    text NOT NULL,
			version     bigint NOT NULL,
			updated     timestamptz NOT NULL)`,
		`CREATE TABLE ` + q + `.election_log (
			name        text COLLATE "C" NOT NULL,
			seq         bigint NOT NULL,
			kind        text NOT NULL,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL,
			transfer    text NOT NULL,
			time        timestamptz NOT NULL,
			detail      text NOT NULL DEFAULT '',
			PRIMARY KEY (name, seq))`,
		candidatesTable(q),
		`CREATE TABLE ` + q + `.jobs (
			name     text COLLATE "C" PRIMARY KEY,
			schedule text NOT NULL,
			created  timestamptz NOT NULL)`,
		`CREATE TABLE ` + q + `.runs (
			job       text COLLATE "C" NOT NULL,
			period    text COLLATE "C" NOT NULL,
			scheduled timestamptz,
			state     text NOT NULL,
			token     bigint NOT NULL,
			holder    text NOT NULL,
			attempt   bigint NOT NULL,
			manual    boolean NOT NULL,
			started   timestamptz,
			finished  timestamptz,
			exit_code bigint NOT NULL,
			output    bytea NOT NULL,
			version   bigint NOT NULL,
			PRIMARY KEY (job, period))`,
		`CREATE FUNCTION ` + q + `.swap(
			p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_lease_ns bigint, p_transfer text, p_event text)
		RETURNS TABLE (o_applied boolean, o_holder text, o_incarnation text,
			o_token bigint, o_lease_ns bigint, o_transfer text, o_version bigint,
			o_updated timestamptz)
		LANGUAGE plpgsql AS $fn$
		DECLARE
			cur ` + q + `.election%ROWTYPE;
			rec ` + q + `.election%ROWTYPE;
		BEGIN
			SELECT * INTO cur FROM ` + q + `.election e WHERE e.name = p_name FOR UPDATE;
			IF p_holder = '' AND p_incarnation <> '' THEN
				-- A free record with an incarnation: refused, reported
				-- by storedriver.CheckSwap after its version and token rules.
				NULL;
			ELSIF NOT FOUND THEN
				IF p_expect = 0 THEN
					INSERT INTO ` + q + `.election AS e
						(name, holder, incarnation, token, lease_ns, transfer, version, updated)
					VALUES (p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer,
						nextval('` + q + `.version_seq'), clock_timestamp())
					ON CONFLICT (name) DO NOTHING
					RETURNING e.* INTO rec;
					IF rec.name IS NULL THEN
						-- A concurrent creator committed first: compare
						-- against its record.
						SELECT * INTO cur FROM ` + q + `.election e WHERE e.name = p_name;
					END IF;
				END IF;
			ELSIF cur.version = p_expect AND cur.token <= p_token THEN
				UPDATE ` + q + `.election AS e SET
					holder = p_holder, incarnation = p_incarnation, token = p_token,
					lease_ns = p_lease_ns, transfer = p_transfer,
					version = nextval('` + q + `.version_seq'), updated = clock_timestamp()
				WHERE e.name = p_name
				RETURNING e.* INTO rec;
			END IF;
			IF rec.name IS NULL THEN
				RETURN QUERY SELECT false, cur.holder, cur.incarnation, cur.token,
					cur.lease_ns, cur.transfer, coalesce(cur.version, 0), cur.updated;
				RETURN;
			END IF;
			IF p_event <> '' THEN
				INSERT INTO ` + q + `.election_log
					(name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT p_name, coalesce(max(l.seq), 0) + 1, p_event, rec.holder,
					rec.incarnation, rec.token, rec.transfer, rec.updated
				FROM ` + q + `.election_log l WHERE l.name = p_name;
			END IF;
			-- Delivered on commit. A payload must stay under 8000 bytes;
			-- an empty one wakes every watcher.
			PERFORM pg_notify('` + channel + `',
				CASE WHEN octet_length(p_name) < 7900 THEN p_name ELSE '' END);
			RETURN QUERY SELECT true, rec.holder, rec.incarnation, rec.token,
				rec.lease_ns, rec.transfer, rec.version, rec.updated;
		END
		$fn$`,
		`INSERT INTO ` + q + `.meta (key, value) VALUES ('schema_version', '` + strconv.Itoa(SchemaVersion) + `')`,
		storeIDStmt(q),
	}
}

// candidatesTable holds the nodes campaigning for a name (Heartbeat).
func candidatesTable(q string) string {
	return `CREATE TABLE ` + q + `.candidates (
			name        text COLLATE "C" NOT NULL,
			node        text COLLATE "C" NOT NULL,
			incarnation text NOT NULL,
			every_ns    bigint NOT NULL,
			since       timestamptz NOT NULL,
			seen        timestamptz NOT NULL,
			PRIMARY KEY (name, node))`
}

// upgrade1 turns a version 1 schema into a version 2 one.
func upgrade1(q string) []string {
	return []string{
		`ALTER TABLE ` + q + `.election_log ADD COLUMN detail text NOT NULL DEFAULT ''`,
		candidatesTable(q),
		`UPDATE ` + q + `.meta SET value = '2' WHERE key = 'schema_version'`,
	}
}

// lockKey is the advisory lock key that serialises schema creation in one
// schema across processes.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("baton schema " + schema))
	return int64(h.Sum64())
}

// setup checks the schema's version, creating the schema at the current
// version if it does not exist, in one transaction under an advisory lock
// so that processes opening a new store at the same time do not race.
func setup(ctx context.Context, pool *pgxpool.Pool, schema, q, channel string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(schema)); err != nil {
			return err
		}
		var (
			schemaExists bool
			relations    int
			metaExists   bool
		)
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
			       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1),
			       to_regclass($2) IS NOT NULL`,
			schema, q+".meta").Scan(&schemaExists, &relations, &metaExists)
		if err != nil {
			return err
		}
		switch {
		case metaExists:
			var v string
			err := tx.QueryRow(ctx, `SELECT value FROM `+q+`.meta WHERE key = 'schema_version'`).Scan(&v)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%w: postgres schema %q has a meta table without a schema_version; it is not a baton store: point the URL's schema parameter at another schema", store.ErrSchema, schema)
			}
			if err != nil {
				return err
			}
			if v == "1" {
				for _, stmt := range upgrade1(q) {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return fmt.Errorf("upgrade schema %q from version 1: %w (in %s)", schema, err, firstLine(stmt))
					}
				}
				v = strconv.Itoa(SchemaVersion)
			}
			if v != strconv.Itoa(SchemaVersion) {
				return fmt.Errorf("%w: postgres schema %q is at version %s, this baton supports version %d; use a baton release that supports version %s, or another schema (?schema=...)",
					store.ErrSchema, schema, v, SchemaVersion, v)
			}
			_, err = tx.Exec(ctx, storeIDStmt(q)) // a store made before store ids gets one
			return err
		case schemaExists && relations > 0:
			return fmt.Errorf("%w: postgres schema %q holds %d relations but no baton meta table; it is not a baton store: point the URL's schema parameter at another schema", store.ErrSchema, schema, relations)
		}
		for _, stmt := range ddl(q, channel) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("create schema: %w (in %s)", err, firstLine(stmt))
			}
		}
		return nil
	})
}

// storeIDStmt gives the store in schema q an id if it has none.
func storeIDStmt(q string) string {
	return `INSERT INTO ` + q + `.meta (key, value) VALUES ('store_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING`
}

// storeIDQuery reads the store's id.
func storeIDQuery(q string) string { return `SELECT value FROM ` + q + `.meta WHERE key = 'store_id'` }

// replaced is the error of a handle whose store has another id than the one
// it opened: the schema was dropped and created afresh, or a backup of
// another store was restored into it.
func (s *Store) replaced(op, found string) error {
	return fmt.Errorf("postgres: %s: %w: schema %q now holds a store with %s, not the store %s this process opened (dropped and recreated, or restored); nothing was written",
		op, store.ErrReplaced, s.schema, found, s.id)
}

// StoreID implements store.Identifier.
func (s *Store) StoreID() string { return s.id }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// sameStore returns refused (an error wrapping store.ErrReplaced) when the
// schema no longer holds the store this handle opened, nil otherwise; err
// is a failure to read the id. Writes call it first in their transaction.
func (s *Store) sameStore(ctx context.Context, tx pgx.Tx, op string) (refused, err error) {
	var id string
	if err := tx.QueryRow(ctx, storeIDQuery(s.q)).Scan(&id); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if id != s.id {
		return s.replaced(op, "id "+id), nil
	}
	return nil, nil
}
