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
// detail column and the candidates table; version 3 the election record's
// session column (store.Record.Session) and its change feed (the wxid
// column, see WatchChanges); version 4 the job's suspension columns
// (store.Job.Suspension, see suspend.go); version 5 swap_many's one-statement
// path (see recordFunctions), with the same outcomes; version 6 that path
// without a row lock taken before its UPDATE, with the same outcomes;
// version 7 successions (store.Succeeder: the election table's successor
// columns and session index, see succession.go); version 8 swap_one's
// notification naming the record it wrote and its version (writePayload),
// so that the change feed reports it without a read, with the same
// outcomes; version 9 the election table's CHECK constraints as triggers
// that refuse the same rows and cost a renewal nothing (checkTriggers);
// version 10 the candidates' attributes (store.Candidate.Attrs, the
// attrs column) and the jobs' preference policies (store.Job.Prefer),
// which a process of version 9 neither reads nor harms.
// An older schema is upgraded in place when a writer opens it,
// and read as it is by a read-only opener.
const SchemaVersion = 10

// ddl returns the statements that create schema version SchemaVersion in
// schema q (a quoted identifier), with notifications on channel.
//
// Tables:
//   - meta: key/value; key 'schema_version' holds SchemaVersion, key
//     'store_id' the store's id, a random UUID made when it was created.
//   - election: one row per name (store.Record); lease in nanoseconds;
//     wxid is the id of the transaction that wrote the row last, indexed,
//     which the change feed reads (see WatchChanges); successor,
//     successor_holder and successor_incarnation on a dead session record
//     (store.Record.Successor and the rest), with an index of the records
//     held through each session and one of the successors named (see
//     successionDDL); its rules (a token is not negative, a successor
//     only on a dead session record) are checkTriggers.
//   - election_log: (name, seq) → store.Event; seq = previous max + 1,
//     written by the record functions while the writing transaction
//     holds the record's row lock.
//   - jobs: store.Job.
//   - runs: (job, period) → store.Run; zero times are NULL, output is bytea
//     so that any bytes a command printed round-trip.
//
// Versions of both records and runs come from one sequence, so a version is
// never reused. Key columns use the "C" collation so that text orders byte
// by byte, as Go strings do (Runs pages by period key).
//
// The record functions are described at recordFunctions.
func ddl(q, channel string) []string {
	stmts := []string{
		`CREATE SCHEMA IF NOT EXISTS ` + q,
		`CREATE TABLE ` + q + `.meta (
			key   text COLLATE "C" PRIMARY KEY,
			value text NOT NULL)`,
		`CREATE SEQUENCE ` + q + `.version_seq AS bigint MINVALUE 1`,
		`CREATE TABLE ` + q + `.election (
			name        text COLLATE "C" PRIMARY KEY,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL,
			lease_ns    bigint NOT NULL,
			transfer    text NOT NULL,
			version     bigint NOT NULL,
			updated     timestamptz NOT NULL,
			session     text NOT NULL DEFAULT '',
			wxid        bigint NOT NULL DEFAULT 0)`,
		wxidIndex(q),
	}
	stmts = append(stmts, successionDDL(q)...)
	stmts = append(stmts, checkTriggers(q)...)
	stmts = append(stmts,
		`CREATE TABLE `+q+`.election_log (
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
		`ALTER TABLE `+q+`.candidates `+attrsColumn,
		`CREATE TABLE `+q+`.jobs (
			name     text COLLATE "C" PRIMARY KEY,
			schedule text NOT NULL,
			created  timestamptz NOT NULL,
			suspended_at   timestamptz,
			suspended_by   text NOT NULL DEFAULT '',
			suspend_reason text NOT NULL DEFAULT '',
			prefer               text NOT NULL DEFAULT '',
			prefer_hysteresis_ns bigint NOT NULL DEFAULT 0)`,
		`CREATE TABLE `+q+`.runs (
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
	)
	stmts = append(stmts, recordFunctions(q, channel)...)
	return append(stmts,
		`INSERT INTO `+q+`.meta (key, value) VALUES ('schema_version', '`+strconv.Itoa(SchemaVersion)+`')`,
		storeIDStmt(q),
	)
}

// wxidIndex lets the change feed find the records written since its last
// read without reading the others.
func wxidIndex(q string) string {
	return `CREATE INDEX election_wxid ON ` + q + `.election (wxid)`
}

// successionDDL adds to the election table of schema q what successions
// need (schema version 7): the successor columns and two partial
// indexes: the records held through a session (HeldThrough, Settle,
// DeleteSession's check), and the dead sessions naming a successor
// (DeleteSession's check). Records held through no session, and session
// records without a successor, are in neither: the writes of the fast
// paths add no index entry for them. Version 7 also added two CHECK
// constraints, which version 9 turned into checkTriggers.
func successionDDL(q string) []string {
	return []string{
		`ALTER TABLE ` + q + `.election
			ADD COLUMN successor text NOT NULL DEFAULT '',
			ADD COLUMN successor_holder text NOT NULL DEFAULT '',
			ADD COLUMN successor_incarnation text NOT NULL DEFAULT ''`,
		`CREATE INDEX election_session ON ` + q + `.election (session, name) WHERE session <> ''`,
		`CREATE INDEX election_successor ON ` + q + `.election (successor) WHERE successor <> ''`,
	}
}

// checkTriggers are the election table's checks (schema version 9), rules
// that no row baton writes breaks, so that a row another program writes
// against them is refused (check_violation, which Store.fail reports as
// store.ErrCorrupt) and nothing is written:
//   - election_token_check: a token is not negative;
//   - election_successor_check: a successor only on a dead session
//     record, naming another session record, with the successor's
//     holder;
//   - election_successor_holder_check: the successor's holder and
//     incarnation only with a successor.
//
// They are triggers, not CHECK constraints, for the renewals' sake.
// PostgreSQL checks every CHECK constraint of a table on every UPDATE of
// it, whichever columns the UPDATE sets, and builds their expressions
// from their stored text again for every statement: about 10 µs of
// server CPU on each renewal, a third of the CPU a renewal costs over a
// raw one-row UPDATE (BenchmarkRenewVsRawUpdate). A trigger declared
// UPDATE OF some columns is skipped, its condition unread, by an UPDATE
// that sets none of them, as a renewal (version and updated alone) does.
// Each is an AFTER row trigger whose WHEN condition is the rule's
// negation, so that the function runs only for a row that breaks it.
func checkTriggers(q string) []string {
	prefix := `'` + store.SessionPrefix + `'`
	trigger := func(name, cols, rule string) string {
		return `CREATE TRIGGER ` + name + ` AFTER INSERT OR UPDATE OF ` + cols + ` ON ` + q + `.election
			FOR EACH ROW WHEN (NOT (` + rule + `)) EXECUTE FUNCTION ` + q + `.refuse_row()`
	}
	return []string{
		`CREATE FUNCTION ` + q + `.refuse_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
		BEGIN
			RAISE EXCEPTION USING ERRCODE = 'check_violation', CONSTRAINT = TG_NAME,
				TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
				MESSAGE = format('new row for relation %I violates check %I', TG_TABLE_NAME, TG_NAME);
		END
		$fn$`,
		trigger(`election_token_check`, `token`, `NEW.token >= 0`),
		trigger(`election_successor_check`, `name, holder, successor, successor_holder`,
			`NEW.successor = '' OR (NEW.holder = '' AND starts_with(NEW.name, `+prefix+`)
				AND starts_with(NEW.successor, `+prefix+`) AND NEW.successor <> NEW.name AND NEW.successor_holder <> '')`),
		trigger(`election_successor_holder_check`, `successor, successor_holder, successor_incarnation`,
			`NEW.successor <> '' OR (NEW.successor_holder = '' AND NEW.successor_incarnation = '')`),
	}
}

// passedSQL is the SQL for "the session record named by the text
// expression session is dead and names a successor", which locks that
// record FOR KEY SHARE (when it exists), so that the write of a name held
// through it is ordered with the write that ends it (see succession.go);
// false at once for the empty session. It is the one condition the
// record functions and the renewal statements add: a write whose record
// names such a session (as stored or as written) is not theirs to decide
// (the name must be settled first, and the token compared resolved), and
// is decided in Go with store.Resolve (see succession.go). It mirrors
// store.Resolve's condition to pass a session (a free record with a
// Successor); it routes, it never decides: a session it calls passed that
// Resolve would not pass only costs the slow path, and one Resolve would
// pass that it does not call passed fails the conformance cases
// (storetest.RunSuccession) and TestRenewalAfterSuccessionConflicts.
func passedSQL(q, session string) string {
	return `(CASE WHEN ` + session + ` = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM ` + q + `.election s WHERE s.name = ` + session + ` FOR KEY SHARE), false) END)`
}

// errSuccession is the SQLSTATE the record functions raise, writing
// nothing, for a swap they leave to Go (passedSQL): a name held through a
// session passed on, a record written through one, a dead session record
// with a successor.
const errSuccession = "BT001"

// raiseSuccession is the PL/pgSQL statement that raises errSuccession.
const raiseSuccession = `RAISE EXCEPTION USING ERRCODE = '` + errSuccession + `',
					MESSAGE = 'a swap of the batch names a session passed on by a succession: baton decides it';`

// currentXID is the SQL for the id of the writing transaction, as a bigint
// (a 64-bit xid8 never wraps around).
const currentXID = `pg_current_xact_id()::text::bigint`

// notifyPayload is the payload of a notification that names nothing: it
// only says that the transaction that sent it changed records, and the
// listener reads which ones (see WatchChanges). PostgreSQL delivers the
// notifications of one transaction with one channel and payload once, so
// a batch (swap_many), a settle or a ledger write notifies once. swap_one
// names the record it wrote instead (writePayloadTag), and a session's
// renewal its record (sessionPayloadTag).
const notifyPayload = ""

// recordFunctions returns the statements that create the record
// functions of schema q, or replace them (upgrade4, upgrade5).
//
// swap_applies() is the rules of storedriver.CheckSwap, in one place: a
// swap applies only if the version matches, the token does not go back, a
// dead session is not held again, a session-held record names a session
// and is held, and a free record has no incarnation. The Go side builds a
// refusal's error from the record the functions return with
// storedriver.CheckSwap.
//
// swap_one() is one swap, as one statement: it locks the record, decides
// with swap_applies(), writes the record, appends the log event and
// notifies, and returns whether it applied with the record as it is now
// (the new one, or the one it was compared against). It returns no rows,
// and writes nothing, when the schema holds another store than p_store_id.
//
// swap_many() applies a batch of swaps (one element of each array per
// swap) as one statement and one transaction:
//
//   - It returns no rows, and writes nothing, when the schema holds another
//     store than p_store_id.
//   - It locks the existing records of the batch in name order, so that
//     batches running at the same time never deadlock, and decides every
//     swap with swap_applies() against the records as locked.
//   - It writes the swaps that apply with one UPDATE and one INSERT, their
//     log events with one INSERT, and returns, for every swap in order,
//     whether it applied and the record as it is now.
//   - A name that comes more than once is swapped once per round, in the
//     order given: the k-th swap of each name (p_round, numbered by the
//     caller) is decided in round k, after round k-1 was written.
//   - It notifies once if any swap applied.
//   - Its plans, made once per connection, probe the primary key once per
//     swap (no table scans, hash or merge joins), so that its cost grows
//     with the batch, not with the records stored.
//   - A batch of one round in which no swap expects version 0 (so that
//     none can create a record: a bulk takeover) is one statement: an
//     UPDATE that reaches the records in name order and decides each
//     with swap_applies() as it writes it (a record another transaction
//     writes is waited for and decided at its new version), logs and
//     returns the swaps that applied, each record probed once for its
//     update and once for its log's last seq; a second statement, when
//     a swap was refused, returns the refused ones with their records as
//     they are then. Its outcomes are those of the rounds
//     (TestSwapManyOneStatementPath compares them with swap_one's;
//     storetest's ConcurrentTakesOneWinner races batches).
//
// Successions (schema version 7): swap_one() and swap_many() decide no
// swap whose record, as stored or as written, names a session that a
// succession passed on, nor one of a dead session record with a
// successor (passedSQL): they raise errSuccession and write nothing, and
// Go settles and decides (succession.go). Every swap they apply has the
// session records its record names (as stored and as written) locked FOR
// KEY SHARE, which orders it with the write that ends them.
//
// A batch of one costs several times what swap_one() costs in the
// server, so Swap calls swap_one().
func recordFunctions(q, channel string) []string {
	prefix := `'` + store.SessionPrefix + `'`
	// req is the batch as rows r(round, the named columns, ord), ord
	// numbering the swaps from 1.
	req := func(cols ...string) string {
		args := "p_round, p_name"
		for _, c := range cols {
			args += ", p_" + c
		}
		return `unnest(` + args + `) WITH ORDINALITY AS r(round, name, ` + strings.Join(append(cols, "ord"), ", ") + `)`
	}
	// cur is the current record of r.name, or NULLs.
	cur := `LEFT JOIN LATERAL (SELECT * FROM ` + q + `.election e WHERE e.name = r.name LIMIT 1) e ON true`
	recCols := `name, holder, incarnation, token, lease_ns, transfer, session, version, updated, wxid`
	recVals := `p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session,
						nextval('` + q + `.version_seq'), clock_timestamp(), ` + currentXID
	return []string{
		`CREATE OR REPLACE FUNCTION ` + q + `.swap_applies(p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_session text, e_exists boolean, e_version bigint, e_token bigint, e_holder text)
		RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
			SELECT NOT ((p_holder = '' AND p_incarnation <> '')
					OR (p_session <> '' AND (p_holder = '' OR NOT starts_with(p_session, ` + prefix + `))))
				AND CASE WHEN NOT e_exists THEN p_expect = 0
					ELSE e_version = p_expect AND e_token <= p_token
						AND NOT (starts_with(p_name, ` + prefix + `) AND e_holder = '' AND p_holder <> '') END
		$fn$`,
		`CREATE OR REPLACE FUNCTION ` + q + `.swap_one(p_store_id text,
			p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_lease_ns bigint, p_transfer text, p_session text, p_event text)
		RETURNS TABLE (o_applied boolean, o_holder text, o_incarnation text, o_token bigint,
			o_lease_ns bigint, o_transfer text, o_session text, o_version bigint, o_updated timestamptz)
		LANGUAGE plpgsql AS $fn$
		DECLARE
			cur ` + q + `.election%ROWTYPE;
			rec ` + q + `.election%ROWTYPE;
		BEGIN
			IF NOT EXISTS (SELECT 1 FROM ` + q + `.meta m WHERE m.key = 'store_id' AND m.value = p_store_id) THEN
				RETURN;
			END IF;
			SELECT * INTO cur FROM ` + q + `.election e WHERE e.name = p_name FOR UPDATE;
			IF (cur.name IS NOT NULL AND (cur.successor <> '' OR ` + passedSQL(q, "cur.session") + `))
					OR ` + passedSQL(q, "p_session") + ` THEN
				` + raiseSuccession + `
			END IF;
			IF NOT ` + q + `.swap_applies(p_name, p_expect, p_holder, p_incarnation, p_token, p_session,
					FOUND, cur.version, cur.token, cur.holder) THEN
				NULL;
			ELSIF cur.name IS NULL THEN
				INSERT INTO ` + q + `.election AS e (` + recCols + `)
				VALUES (` + recVals + `)
				-- A concurrent creator committed first: the swap is
				-- refused, compared against its record.
				ON CONFLICT (name) DO NOTHING
				RETURNING e.* INTO rec;
				IF rec.name IS NULL THEN
					SELECT * INTO cur FROM ` + q + `.election e WHERE e.name = p_name;
				END IF;
			ELSE
				UPDATE ` + q + `.election AS e SET (` + recCols + `) = (` + recVals + `)
				WHERE e.name = p_name
				RETURNING e.* INTO rec;
			END IF;
			IF rec.name IS NULL THEN
				RETURN QUERY SELECT false, cur.holder, cur.incarnation, cur.token, cur.lease_ns,
					cur.transfer, cur.session, coalesce(cur.version, 0), cur.updated;
				RETURN;
			END IF;
			IF p_event <> '' THEN
				INSERT INTO ` + q + `.election_log
					(name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT p_name, coalesce(max(l.seq), 0) + 1, p_event, rec.holder,
					rec.incarnation, rec.token, rec.transfer, rec.updated
				FROM ` + q + `.election_log l WHERE l.name = p_name;
			END IF;
			-- The record and its version (writePayloadTag): the listeners
			-- report the write without a read.
			PERFORM pg_notify('` + channel + `', '` + writePayloadTag + `' || rec.version::text || ' ' || p_name);
			RETURN QUERY SELECT true, rec.holder, rec.incarnation, rec.token, rec.lease_ns,
				rec.transfer, rec.session, rec.version, rec.updated;
		END
		$fn$`,
		`CREATE OR REPLACE FUNCTION ` + q + `.swap_many(p_store_id text, p_round integer[],
			p_name text[], p_expect bigint[], p_holder text[], p_incarnation text[],
			p_token bigint[], p_lease_ns bigint[], p_transfer text[], p_session text[], p_event text[])
		RETURNS TABLE (o_ord integer, o_applied boolean, o_holder text, o_incarnation text, o_token bigint,
			o_lease_ns bigint, o_transfer text, o_session text, o_version bigint, o_updated timestamptz)
		LANGUAGE plpgsql
		-- Every record is reached through its primary key, one probe per
		-- swap, whatever the batch's and the table's sizes: a plan cached
		-- for a batch of one must not scan the table for the next batch,
		-- nor a plan for a small table scan a large one. Plans are made
		-- once per connection (generic), not at every call.
		SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
		SET plan_cache_mode = force_generic_plan
		AS $fn$
		DECLARE
			v_ok     boolean[]; -- per swap of this round: it applies
			v_found  boolean[]; -- per swap of this round: its record existed
			v_create boolean;   -- this round creates records
			v_applied boolean;  -- this round applies a swap
			v_passed boolean;   -- this round has a swap for Go (passedSQL)
			v_any    boolean := false;
			v_xid    bigint;
			v_n      bigint;    -- swaps the one-statement path applied
		BEGIN
			IF NOT EXISTS (SELECT 1 FROM ` + q + `.meta m WHERE m.key = 'store_id' AND m.value = p_store_id) THEN
				RETURN;
			END IF;
			IF (SELECT max(k) FROM unnest(p_round) k) = 1 AND 0 <> ALL(p_expect) THEN
				-- One round, and no swap can create a record (one that
				-- expects version 0 goes the general way below): a bulk
				-- takeover or release. The UPDATE decides each swap with
				-- swap_applies() against its record as it writes it, with
				-- no row lock taken before: a record that another
				-- transaction is writing is waited for and decided again
				-- at its new version (PostgreSQL evaluates an UPDATE's
				-- condition again on the newest version of a row it had
				-- to wait for). It reaches the records in name order (the
				-- batch, sorted, joined to the primary key), so batches at
				-- the same time never deadlock. It writes the log events
				-- of the swaps that apply and returns them; a second
				-- statement, only if a swap was refused, returns the
				-- refused ones with their records as they are then
				-- (committed, at least as new as the one each was decided
				-- against), without a lock, which could deadlock with a
				-- batch waiting in its UPDATE for a record this one wrote.
				v_xid := ` + currentXID + `;
				RETURN QUERY
				WITH r AS MATERIALIZED (
					SELECT * FROM ` + req("expect", "holder", "incarnation", "token", "lease_ns", "transfer", "session", "event") + `
					ORDER BY r.name COLLATE "C"
				), up AS (
					UPDATE ` + q + `.election AS e SET
						holder = r.holder, incarnation = r.incarnation, token = r.token,
						lease_ns = r.lease_ns, transfer = r.transfer, session = r.session,
						version = nextval('` + q + `.version_seq'), updated = clock_timestamp(), wxid = v_xid
					FROM r WHERE e.name = r.name
						AND ` + q + `.swap_applies(r.name, r.expect, r.holder, r.incarnation, r.token, r.session,
							true, e.version, e.token, e.holder)
						AND e.successor = '' AND NOT ` + passedSQL(q, "e.session") + `
						AND NOT ` + passedSQL(q, "r.session") + `
					RETURNING r.ord, r.event, e.name, e.holder, e.incarnation, e.token, e.lease_ns,
						e.transfer, e.session, e.version, e.updated
				), lg AS (
					INSERT INTO ` + q + `.election_log
						(name, seq, kind, holder, incarnation, token, transfer, time)
					SELECT u.name,
						coalesce((SELECT max(l.seq) FROM ` + q + `.election_log l WHERE l.name = u.name), 0) + 1,
						u.event, u.holder, u.incarnation, u.token, u.transfer, u.updated
					FROM up u WHERE u.event <> ''
				)
				SELECT u.ord::integer, true, u.holder, u.incarnation, u.token, u.lease_ns,
					u.transfer, u.session, u.version, u.updated
				FROM up u;
				GET DIAGNOSTICS v_n = ROW_COUNT;
				IF v_n > 0 THEN
					PERFORM pg_notify('` + channel + `', '` + notifyPayload + `');
				END IF;
				IF v_n < cardinality(p_name) THEN
					-- The refused swaps: those whose record this
					-- transaction did not write. One refused for a
					-- session passed on is Go's to decide.
					IF EXISTS (SELECT 1 FROM ` + req("session") + `
						` + cur + `
						WHERE e.wxid IS DISTINCT FROM v_xid AND ((e.name IS NOT NULL
							AND (e.successor <> '' OR ` + passedSQL(q, "e.session") + `))
							OR ` + passedSQL(q, "r.session") + `)) THEN
						` + raiseSuccession + `
					END IF;
					RETURN QUERY
					SELECT r.ord::integer, false, e.holder, e.incarnation, e.token, e.lease_ns,
						e.transfer, e.session, coalesce(e.version, 0), e.updated
					FROM ` + req() + `
					` + cur + `
					WHERE e.wxid IS DISTINCT FROM v_xid;
				END IF;
				RETURN;
			END IF;
			FOR v_k IN 1 .. (SELECT coalesce(max(k), 0) FROM unnest(p_round) k) LOOP
				-- Each statement below sees the records as locked here.
				PERFORM 1 FROM ` + q + `.election e
				WHERE e.name = ANY(p_name) ORDER BY e.name FOR UPDATE;
				SELECT array_agg(ok ORDER BY ord), array_agg(existed ORDER BY ord),
					coalesce(bool_or(ok AND NOT existed), false), coalesce(bool_or(ok), false),
					coalesce(bool_or(passed), false)
				INTO v_ok, v_found, v_create, v_applied, v_passed
				FROM (SELECT r.ord, e.name IS NOT NULL AS existed, r.round = v_k
						AND ` + q + `.swap_applies(r.name, r.expect, r.holder, r.incarnation, r.token, r.session,
							e.name IS NOT NULL, e.version, e.token, e.holder) AS ok,
						r.round = v_k AND ((e.name IS NOT NULL AND (e.successor <> '' OR ` + passedSQL(q, "e.session") + `))
							OR ` + passedSQL(q, "r.session") + `) AS passed
					FROM ` + req("expect", "holder", "incarnation", "token", "session") + `
					` + cur + `) d;
				IF v_passed THEN
					` + raiseSuccession + `
				END IF;
				UPDATE ` + q + `.election AS e SET
					holder = r.holder, incarnation = r.incarnation, token = r.token,
					lease_ns = r.lease_ns, transfer = r.transfer, session = r.session,
					version = nextval('` + q + `.version_seq'), updated = clock_timestamp(),
					wxid = ` + currentXID + `
				FROM ` + req("holder", "incarnation", "token", "lease_ns", "transfer", "session") + `
				WHERE e.name = r.name AND v_ok[r.ord] AND v_found[r.ord];
				IF v_create THEN
					INSERT INTO ` + q + `.election AS e
						(name, holder, incarnation, token, lease_ns, transfer, session, version, updated, wxid)
					SELECT r.name, r.holder, r.incarnation, r.token, r.lease_ns, r.transfer, r.session,
						nextval('` + q + `.version_seq'), clock_timestamp(), ` + currentXID + `
					FROM ` + req("holder", "incarnation", "token", "lease_ns", "transfer", "session") + `
					WHERE v_ok[r.ord] AND NOT v_found[r.ord]
					ORDER BY r.name
					-- A concurrent creator committed first: the swap is
					-- refused, compared against its record.
					ON CONFLICT (name) DO NOTHING;
					-- A record that did not exist was created by this
					-- swap if this transaction wrote it.
					SELECT array_agg(ok ORDER BY ord), coalesce(bool_or(ok), false) INTO v_ok, v_applied
					FROM (SELECT r.ord, v_ok[r.ord] AND (v_found[r.ord] OR e.wxid = ` + currentXID + `) AS ok
						FROM ` + req() + `
						` + cur + `) d;
				END IF;
				INSERT INTO ` + q + `.election_log
					(name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT e.name,
					coalesce((SELECT max(l.seq) FROM ` + q + `.election_log l WHERE l.name = e.name), 0) + 1,
					r.event, e.holder, e.incarnation, e.token, e.transfer, e.updated
				FROM ` + req("event") + `
				JOIN ` + q + `.election e ON e.name = r.name
				WHERE v_ok[r.ord] AND r.event <> '';
				v_any := v_any OR v_applied;
				RETURN QUERY
				SELECT r.ord::integer, v_ok[r.ord], e.holder, e.incarnation, e.token, e.lease_ns,
					e.transfer, e.session, coalesce(e.version, 0), e.updated
				FROM ` + req() + `
				` + cur + `
				WHERE r.round = v_k
				ORDER BY r.ord;
			END LOOP;
			IF v_any THEN
				PERFORM pg_notify('` + channel + `', '` + notifyPayload + `');
			END IF;
		END
		$fn$`,
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

// attrsColumn adds the candidates' attributes (store.Candidate.Attrs) to
// the candidates table: version 10.
const attrsColumn = `ADD COLUMN attrs text NOT NULL DEFAULT ''`

// upgrade9 turns a version 9 schema into a version 10 one: the
// candidates' attributes, empty on every row there is (no attributes),
// and the jobs' preference policies (store.Job.Prefer), none for every
// job. A process of the previous release writes its candidate rows and
// jobs as before (the columns keep their values, or their defaults) and
// reads them without them: nothing it does conflicts, so the store keeps
// its id, as in upgrade4.
func upgrade9(q string) []string {
	return []string{
		`ALTER TABLE ` + q + `.candidates ` + attrsColumn,
		`ALTER TABLE ` + q + `.jobs ADD COLUMN prefer text NOT NULL DEFAULT '',
			ADD COLUMN prefer_hysteresis_ns bigint NOT NULL DEFAULT 0`,
		`UPDATE ` + q + `.meta SET value = '10' WHERE key = 'schema_version'`,
	}
}

// upgrade1 turns a version 1 schema into a version 2 one.
func upgrade1(q string) []string {
	return []string{
		`ALTER TABLE ` + q + `.election_log ADD COLUMN detail text NOT NULL DEFAULT ''`,
		candidatesTable(q),
		`UPDATE ` + q + `.meta SET value = '2' WHERE key = 'schema_version'`,
	}
}

// upgrade2 turns a version 2 schema into a version 3 one: the session
// column, the change feed's wxid column and index, and the record
// functions. It gives the store a new id, so that a process of an older
// baton that opened the store before fails its next write with
// store.ErrReplaced and stops: it would read a name held through a live
// session as a record nobody renews and take it over. The version 2 swap
// function stays, but fails the same way (undefined_function, which an
// older baton maps to store.ErrReplaced) with a message saying why.
func upgrade2(q, channel string) []string {
	stmts := []string{
		`ALTER TABLE ` + q + `.election ADD COLUMN session text NOT NULL DEFAULT '',
			ADD COLUMN wxid bigint NOT NULL DEFAULT 0`,
		wxidIndex(q),
		`CREATE OR REPLACE FUNCTION ` + q + `.swap(
			p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_lease_ns bigint, p_transfer text, p_event text)
		RETURNS TABLE (o_applied boolean, o_holder text, o_incarnation text,
			o_token bigint, o_lease_ns bigint, o_transfer text, o_version bigint,
			o_updated timestamptz)
		LANGUAGE plpgsql AS $fn$
		BEGIN
			RAISE EXCEPTION USING ERRCODE = 'undefined_function',
				MESSAGE = 'this baton store was upgraded to schema version 3 by a newer baton; this process runs an older one: restart it with the newer release';
		END
		$fn$`,
	}
	stmts = append(stmts, recordFunctions(q, channel)...)
	return append(stmts,
		`UPDATE `+q+`.meta SET value = gen_random_uuid()::text WHERE key = 'store_id'`,
		`UPDATE `+q+`.meta SET value = '3' WHERE key = 'schema_version'`)
}

// upgrade4 turns a version 4 schema into a version 5 one: the record
// functions replaced, swap_many with its one-statement path. Its outcomes
// are those of version 4's, so the store keeps its id: a process of an
// older baton that opened the store before goes on with the same
// results (a new one refuses to open version 5, as for every newer
// version).
func upgrade4(q, channel string) []string {
	return append(recordFunctions(q, channel),
		`UPDATE `+q+`.meta SET value = '5' WHERE key = 'schema_version'`)
}

// upgrade5 turns a version 5 schema into a version 6 one: the record
// functions replaced, swap_many's one-statement path without a row lock
// taken before its UPDATE. The outcomes are version 5's, so the store keeps
// its id, as in upgrade4.
func upgrade5(q, channel string) []string {
	return append(recordFunctions(q, channel),
		`UPDATE `+q+`.meta SET value = '6' WHERE key = 'schema_version'`)
}

// upgrade6 turns a version 6 schema into a version 7 one: successions
// (successionDDL) and the record functions that leave a swap touching one
// to Go. It gives the store a new id, so that a process of an older baton
// that opened the store before fails its next write with
// store.ErrReplaced and stops: it reads the names a succession passed on
// as they are stored, and would take one at its stored token + 1, a token
// the succession already handed to the successor; and it would write a
// name without settling it.
func upgrade6(q, channel string) []string {
	stmts := append(successionDDL(q), recordFunctions(q, channel)...)
	return append(stmts,
		`UPDATE `+q+`.meta SET value = gen_random_uuid()::text WHERE key = 'store_id'`,
		`UPDATE `+q+`.meta SET value = '7' WHERE key = 'schema_version'`)
}

// upgrade7 turns a version 7 schema into a version 8 one: the record
// functions replaced, swap_one's notification naming the record it wrote
// (writePayloadTag). The outcomes are version 7's, so the store keeps its
// id, as in upgrade4; a listener of the previous release reads on a named
// notification as on any other (it parses session renewals' alone).
func upgrade7(q, channel string) []string {
	return append(recordFunctions(q, channel),
		`UPDATE `+q+`.meta SET value = '8' WHERE key = 'schema_version'`)
}

// upgrade8 turns a version 8 schema into a version 9 one: the election
// table's CHECK constraints replaced by checkTriggers, which refuse the
// same rows. Every write of every release passes both, so the store keeps
// its id, as in upgrade4. The constraints are dropped if they exist: a
// store that came from version 6 in the same transaction never had the
// successions' two (successionDDL no longer makes them).
func upgrade8(q string) []string {
	stmts := []string{`ALTER TABLE ` + q + `.election DROP CONSTRAINT IF EXISTS election_token_check,
		DROP CONSTRAINT IF EXISTS election_successor, DROP CONSTRAINT IF EXISTS election_successor_holder`}
	stmts = append(stmts, checkTriggers(q)...)
	return append(stmts, `UPDATE `+q+`.meta SET value = '9' WHERE key = 'schema_version'`)
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
				return fmt.Errorf("%w: postgres schema %q has a meta table without a schema_version, not a baton store; baton left it untouched: point the URL's schema parameter at another schema", store.ErrSchema, schema)
			}
			if err != nil {
				return err
			}
			for _, up := range []struct {
				from  string
				stmts []string
			}{{"1", upgrade1(q)}, {"2", upgrade2(q, channel)}, {"3", upgrade3(q)}, {"4", upgrade4(q, channel)}, {"5", upgrade5(q, channel)}, {"6", upgrade6(q, channel)}, {"7", upgrade7(q, channel)}, {"8", upgrade8(q)}, {"9", upgrade9(q)}} {
				if v != up.from {
					continue
				}
				for _, stmt := range up.stmts {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return fmt.Errorf("upgrade schema %q from version %s: %w (in %s)", schema, v, err, firstLine(stmt))
					}
				}
				n, _ := strconv.Atoi(v)
				v = strconv.Itoa(n + 1)
			}
			if v != strconv.Itoa(SchemaVersion) {
				return fmt.Errorf("%w: postgres schema %q is at version %s, this baton supports version %d; use a baton release that supports version %s, or another schema (?schema=...)",
					store.ErrSchema, schema, v, SchemaVersion, v)
			}
			_, err = tx.Exec(ctx, storeIDStmt(q)) // a store made before store ids gets one
			return err
		case schemaExists && relations > 0:
			return fmt.Errorf("%w: postgres schema %q holds %d relations but no baton meta table, not a baton store; baton left it untouched: point the URL's schema parameter at another schema", store.ErrSchema, schema, relations)
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
