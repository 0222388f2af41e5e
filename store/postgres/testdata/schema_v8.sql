-- The schema of a baton store at schema version 8, as baton created it
-- before version 9 (constraints as triggers), at commit e846c1c; in
-- schema baton, channel baton_baton. TestSchemaUpgradeFrom8 builds old
-- stores from it.
CREATE SCHEMA IF NOT EXISTS "baton";
CREATE TABLE "baton".meta (
			key   text COLLATE "C" PRIMARY KEY,
			value text NOT NULL);
CREATE SEQUENCE "baton".version_seq AS bigint MINVALUE 1;
CREATE TABLE "baton".election (
			name        text COLLATE "C" PRIMARY KEY,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL CHECK (token >= 0),
			lease_ns    bigint NOT NULL,
			transfer    text NOT NULL,
			version     bigint NOT NULL,
			updated     timestamptz NOT NULL,
			session     text NOT NULL DEFAULT '',
			wxid        bigint NOT NULL DEFAULT 0);
CREATE INDEX election_wxid ON "baton".election (wxid);
ALTER TABLE "baton".election
			ADD COLUMN successor text NOT NULL DEFAULT '',
			ADD COLUMN successor_holder text NOT NULL DEFAULT '',
			ADD COLUMN successor_incarnation text NOT NULL DEFAULT '',
			ADD CONSTRAINT election_successor CHECK (successor = '' OR (holder = ''
				AND starts_with(name, '@session/') AND starts_with(successor, '@session/')
				AND successor <> name AND successor_holder <> '')),
			ADD CONSTRAINT election_successor_holder CHECK (successor <> ''
				OR (successor_holder = '' AND successor_incarnation = ''));
CREATE INDEX election_session ON "baton".election (session, name) WHERE session <> '';
CREATE INDEX election_successor ON "baton".election (successor) WHERE successor <> '';
CREATE TABLE "baton".election_log (
			name        text COLLATE "C" NOT NULL,
			seq         bigint NOT NULL,
			kind        text NOT NULL,
			holder      text NOT NULL,
			incarnation text NOT NULL,
			token       bigint NOT NULL,
			transfer    text NOT NULL,
			time        timestamptz NOT NULL,
			detail      text NOT NULL DEFAULT '',
			PRIMARY KEY (name, seq));
CREATE TABLE "baton".candidates (
			name        text COLLATE "C" NOT NULL,
			node        text COLLATE "C" NOT NULL,
			incarnation text NOT NULL,
			every_ns    bigint NOT NULL,
			since       timestamptz NOT NULL,
			seen        timestamptz NOT NULL,
			PRIMARY KEY (name, node));
CREATE TABLE "baton".jobs (
			name     text COLLATE "C" PRIMARY KEY,
			schedule text NOT NULL,
			created  timestamptz NOT NULL,
			suspended_at   timestamptz,
			suspended_by   text NOT NULL DEFAULT '',
			suspend_reason text NOT NULL DEFAULT '');
CREATE TABLE "baton".runs (
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
			PRIMARY KEY (job, period));
CREATE OR REPLACE FUNCTION "baton".swap_applies(p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_session text, e_exists boolean, e_version bigint, e_token bigint, e_holder text)
		RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
			SELECT NOT ((p_holder = '' AND p_incarnation <> '')
					OR (p_session <> '' AND (p_holder = '' OR NOT starts_with(p_session, '@session/'))))
				AND CASE WHEN NOT e_exists THEN p_expect = 0
					ELSE e_version = p_expect AND e_token <= p_token
						AND NOT (starts_with(p_name, '@session/') AND e_holder = '' AND p_holder <> '') END
		$fn$;
CREATE OR REPLACE FUNCTION "baton".swap_one(p_store_id text,
			p_name text, p_expect bigint, p_holder text, p_incarnation text,
			p_token bigint, p_lease_ns bigint, p_transfer text, p_session text, p_event text)
		RETURNS TABLE (o_applied boolean, o_holder text, o_incarnation text, o_token bigint,
			o_lease_ns bigint, o_transfer text, o_session text, o_version bigint, o_updated timestamptz)
		LANGUAGE plpgsql AS $fn$
		DECLARE
			cur "baton".election%ROWTYPE;
			rec "baton".election%ROWTYPE;
		BEGIN
			IF NOT EXISTS (SELECT 1 FROM "baton".meta m WHERE m.key = 'store_id' AND m.value = p_store_id) THEN
				RETURN;
			END IF;
			SELECT * INTO cur FROM "baton".election e WHERE e.name = p_name FOR UPDATE;
			IF (cur.name IS NOT NULL AND (cur.successor <> '' OR (CASE WHEN cur.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = cur.session FOR KEY SHARE), false) END)))
					OR (CASE WHEN p_session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = p_session FOR KEY SHARE), false) END) THEN
				RAISE EXCEPTION USING ERRCODE = 'BT001',
					MESSAGE = 'a swap of the batch names a session passed on by a succession: baton decides it';
			END IF;
			IF NOT "baton".swap_applies(p_name, p_expect, p_holder, p_incarnation, p_token, p_session,
					FOUND, cur.version, cur.token, cur.holder) THEN
				NULL;
			ELSIF cur.name IS NULL THEN
				INSERT INTO "baton".election AS e (name, holder, incarnation, token, lease_ns, transfer, session, version, updated, wxid)
				VALUES (p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session,
						nextval('"baton".version_seq'), clock_timestamp(), pg_current_xact_id()::text::bigint)
				-- A concurrent creator committed first: the swap is
				-- refused, compared against its record.
				ON CONFLICT (name) DO NOTHING
				RETURNING e.* INTO rec;
				IF rec.name IS NULL THEN
					SELECT * INTO cur FROM "baton".election e WHERE e.name = p_name;
				END IF;
			ELSE
				UPDATE "baton".election AS e SET (name, holder, incarnation, token, lease_ns, transfer, session, version, updated, wxid) = (p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session,
						nextval('"baton".version_seq'), clock_timestamp(), pg_current_xact_id()::text::bigint)
				WHERE e.name = p_name
				RETURNING e.* INTO rec;
			END IF;
			IF rec.name IS NULL THEN
				RETURN QUERY SELECT false, cur.holder, cur.incarnation, cur.token, cur.lease_ns,
					cur.transfer, cur.session, coalesce(cur.version, 0), cur.updated;
				RETURN;
			END IF;
			IF p_event <> '' THEN
				INSERT INTO "baton".election_log
					(name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT p_name, coalesce(max(l.seq), 0) + 1, p_event, rec.holder,
					rec.incarnation, rec.token, rec.transfer, rec.updated
				FROM "baton".election_log l WHERE l.name = p_name;
			END IF;
			-- The record and its version (writePayloadTag): the listeners
			-- report the write without a read.
			PERFORM pg_notify('baton_baton', 'write ' || rec.version::text || ' ' || p_name);
			RETURN QUERY SELECT true, rec.holder, rec.incarnation, rec.token, rec.lease_ns,
				rec.transfer, rec.session, rec.version, rec.updated;
		END
		$fn$;
CREATE OR REPLACE FUNCTION "baton".swap_many(p_store_id text, p_round integer[],
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
			IF NOT EXISTS (SELECT 1 FROM "baton".meta m WHERE m.key = 'store_id' AND m.value = p_store_id) THEN
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
				v_xid := pg_current_xact_id()::text::bigint;
				RETURN QUERY
				WITH r AS MATERIALIZED (
					SELECT * FROM unnest(p_round, p_name, p_expect, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session, p_event) WITH ORDINALITY AS r(round, name, expect, holder, incarnation, token, lease_ns, transfer, session, event, ord)
					ORDER BY r.name COLLATE "C"
				), up AS (
					UPDATE "baton".election AS e SET
						holder = r.holder, incarnation = r.incarnation, token = r.token,
						lease_ns = r.lease_ns, transfer = r.transfer, session = r.session,
						version = nextval('"baton".version_seq'), updated = clock_timestamp(), wxid = v_xid
					FROM r WHERE e.name = r.name
						AND "baton".swap_applies(r.name, r.expect, r.holder, r.incarnation, r.token, r.session,
							true, e.version, e.token, e.holder)
						AND e.successor = '' AND NOT (CASE WHEN e.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = e.session FOR KEY SHARE), false) END)
						AND NOT (CASE WHEN r.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = r.session FOR KEY SHARE), false) END)
					RETURNING r.ord, r.event, e.name, e.holder, e.incarnation, e.token, e.lease_ns,
						e.transfer, e.session, e.version, e.updated
				), lg AS (
					INSERT INTO "baton".election_log
						(name, seq, kind, holder, incarnation, token, transfer, time)
					SELECT u.name,
						coalesce((SELECT max(l.seq) FROM "baton".election_log l WHERE l.name = u.name), 0) + 1,
						u.event, u.holder, u.incarnation, u.token, u.transfer, u.updated
					FROM up u WHERE u.event <> ''
				)
				SELECT u.ord::integer, true, u.holder, u.incarnation, u.token, u.lease_ns,
					u.transfer, u.session, u.version, u.updated
				FROM up u;
				GET DIAGNOSTICS v_n = ROW_COUNT;
				IF v_n > 0 THEN
					PERFORM pg_notify('baton_baton', '');
				END IF;
				IF v_n < cardinality(p_name) THEN
					-- The refused swaps: those whose record this
					-- transaction did not write. One refused for a
					-- session passed on is Go's to decide.
					IF EXISTS (SELECT 1 FROM unnest(p_round, p_name, p_session) WITH ORDINALITY AS r(round, name, session, ord)
						LEFT JOIN LATERAL (SELECT * FROM "baton".election e WHERE e.name = r.name LIMIT 1) e ON true
						WHERE e.wxid IS DISTINCT FROM v_xid AND ((e.name IS NOT NULL
							AND (e.successor <> '' OR (CASE WHEN e.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = e.session FOR KEY SHARE), false) END)))
							OR (CASE WHEN r.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = r.session FOR KEY SHARE), false) END))) THEN
						RAISE EXCEPTION USING ERRCODE = 'BT001',
					MESSAGE = 'a swap of the batch names a session passed on by a succession: baton decides it';
					END IF;
					RETURN QUERY
					SELECT r.ord::integer, false, e.holder, e.incarnation, e.token, e.lease_ns,
						e.transfer, e.session, coalesce(e.version, 0), e.updated
					FROM unnest(p_round, p_name) WITH ORDINALITY AS r(round, name, ord)
					LEFT JOIN LATERAL (SELECT * FROM "baton".election e WHERE e.name = r.name LIMIT 1) e ON true
					WHERE e.wxid IS DISTINCT FROM v_xid;
				END IF;
				RETURN;
			END IF;
			FOR v_k IN 1 .. (SELECT coalesce(max(k), 0) FROM unnest(p_round) k) LOOP
				-- Each statement below sees the records as locked here.
				PERFORM 1 FROM "baton".election e
				WHERE e.name = ANY(p_name) ORDER BY e.name FOR UPDATE;
				SELECT array_agg(ok ORDER BY ord), array_agg(existed ORDER BY ord),
					coalesce(bool_or(ok AND NOT existed), false), coalesce(bool_or(ok), false),
					coalesce(bool_or(passed), false)
				INTO v_ok, v_found, v_create, v_applied, v_passed
				FROM (SELECT r.ord, e.name IS NOT NULL AS existed, r.round = v_k
						AND "baton".swap_applies(r.name, r.expect, r.holder, r.incarnation, r.token, r.session,
							e.name IS NOT NULL, e.version, e.token, e.holder) AS ok,
						r.round = v_k AND ((e.name IS NOT NULL AND (e.successor <> '' OR (CASE WHEN e.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = e.session FOR KEY SHARE), false) END)))
							OR (CASE WHEN r.session = '' THEN false ELSE coalesce((SELECT s.holder = '' AND s.successor <> ''
		FROM "baton".election s WHERE s.name = r.session FOR KEY SHARE), false) END)) AS passed
					FROM unnest(p_round, p_name, p_expect, p_holder, p_incarnation, p_token, p_session) WITH ORDINALITY AS r(round, name, expect, holder, incarnation, token, session, ord)
					LEFT JOIN LATERAL (SELECT * FROM "baton".election e WHERE e.name = r.name LIMIT 1) e ON true) d;
				IF v_passed THEN
					RAISE EXCEPTION USING ERRCODE = 'BT001',
					MESSAGE = 'a swap of the batch names a session passed on by a succession: baton decides it';
				END IF;
				UPDATE "baton".election AS e SET
					holder = r.holder, incarnation = r.incarnation, token = r.token,
					lease_ns = r.lease_ns, transfer = r.transfer, session = r.session,
					version = nextval('"baton".version_seq'), updated = clock_timestamp(),
					wxid = pg_current_xact_id()::text::bigint
				FROM unnest(p_round, p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session) WITH ORDINALITY AS r(round, name, holder, incarnation, token, lease_ns, transfer, session, ord)
				WHERE e.name = r.name AND v_ok[r.ord] AND v_found[r.ord];
				IF v_create THEN
					INSERT INTO "baton".election AS e
						(name, holder, incarnation, token, lease_ns, transfer, session, version, updated, wxid)
					SELECT r.name, r.holder, r.incarnation, r.token, r.lease_ns, r.transfer, r.session,
						nextval('"baton".version_seq'), clock_timestamp(), pg_current_xact_id()::text::bigint
					FROM unnest(p_round, p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer, p_session) WITH ORDINALITY AS r(round, name, holder, incarnation, token, lease_ns, transfer, session, ord)
					WHERE v_ok[r.ord] AND NOT v_found[r.ord]
					ORDER BY r.name
					-- A concurrent creator committed first: the swap is
					-- refused, compared against its record.
					ON CONFLICT (name) DO NOTHING;
					-- A record that did not exist was created by this
					-- swap if this transaction wrote it.
					SELECT array_agg(ok ORDER BY ord), coalesce(bool_or(ok), false) INTO v_ok, v_applied
					FROM (SELECT r.ord, v_ok[r.ord] AND (v_found[r.ord] OR e.wxid = pg_current_xact_id()::text::bigint) AS ok
						FROM unnest(p_round, p_name) WITH ORDINALITY AS r(round, name, ord)
						LEFT JOIN LATERAL (SELECT * FROM "baton".election e WHERE e.name = r.name LIMIT 1) e ON true) d;
				END IF;
				INSERT INTO "baton".election_log
					(name, seq, kind, holder, incarnation, token, transfer, time)
				SELECT e.name,
					coalesce((SELECT max(l.seq) FROM "baton".election_log l WHERE l.name = e.name), 0) + 1,
					r.event, e.holder, e.incarnation, e.token, e.transfer, e.updated
				FROM unnest(p_round, p_name, p_event) WITH ORDINALITY AS r(round, name, event, ord)
				JOIN "baton".election e ON e.name = r.name
				WHERE v_ok[r.ord] AND r.event <> '';
				v_any := v_any OR v_applied;
				RETURN QUERY
				SELECT r.ord::integer, v_ok[r.ord], e.holder, e.incarnation, e.token, e.lease_ns,
					e.transfer, e.session, coalesce(e.version, 0), e.updated
				FROM unnest(p_round, p_name) WITH ORDINALITY AS r(round, name, ord)
				LEFT JOIN LATERAL (SELECT * FROM "baton".election e WHERE e.name = r.name LIMIT 1) e ON true
				WHERE r.round = v_k
				ORDER BY r.ord;
			END LOOP;
			IF v_any THEN
				PERFORM pg_notify('baton_baton', '');
			END IF;
		END
		$fn$;
INSERT INTO "baton".meta (key, value) VALUES ('schema_version', '8');
INSERT INTO "baton".meta (key, value) VALUES ('store_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING;
