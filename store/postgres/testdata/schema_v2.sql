-- The schema of a baton store at schema version 2, as baton created it
-- before version 3 (session records); in schema baton, channel baton_baton.
-- TestSchemaUpgrade builds old stores from it.
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
	updated     timestamptz NOT NULL);
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
	created  timestamptz NOT NULL);
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
CREATE FUNCTION "baton".swap(
	p_name text, p_expect bigint, p_holder text, p_incarnation text,
	p_token bigint, p_lease_ns bigint, p_transfer text, p_event text)
RETURNS TABLE (o_applied boolean, o_holder text, o_incarnation text,
	o_token bigint, o_lease_ns bigint, o_transfer text, o_version bigint,
	o_updated timestamptz)
LANGUAGE plpgsql AS $fn$
DECLARE
	cur "baton".election%ROWTYPE;
	rec "baton".election%ROWTYPE;
BEGIN
	SELECT * INTO cur FROM "baton".election e WHERE e.name = p_name FOR UPDATE;
	IF p_holder = '' AND p_incarnation <> '' THEN
-- A free record with an incarnation: refused, reported
-- by storedriver.CheckSwap after its version and token rules.
NULL;
	ELSIF NOT FOUND THEN
IF p_expect = 0 THEN
	INSERT INTO "baton".election AS e
(name, holder, incarnation, token, lease_ns, transfer, version, updated)
	VALUES (p_name, p_holder, p_incarnation, p_token, p_lease_ns, p_transfer,
nextval('"baton".version_seq'), clock_timestamp())
	ON CONFLICT (name) DO NOTHING
	RETURNING e.* INTO rec;
	IF rec.name IS NULL THEN
-- A concurrent creator committed first: compare
-- against its record.
SELECT * INTO cur FROM "baton".election e WHERE e.name = p_name;
	END IF;
END IF;
	ELSIF cur.version = p_expect AND cur.token <= p_token THEN
UPDATE "baton".election AS e SET
	holder = p_holder, incarnation = p_incarnation, token = p_token,
	lease_ns = p_lease_ns, transfer = p_transfer,
	version = nextval('"baton".version_seq'), updated = clock_timestamp()
WHERE e.name = p_name
RETURNING e.* INTO rec;
	END IF;
	IF rec.name IS NULL THEN
RETURN QUERY SELECT false, cur.holder, cur.incarnation, cur.token,
	cur.lease_ns, cur.transfer, coalesce(cur.version, 0), cur.updated;
RETURN;
	END IF;
	IF p_event <> '' THEN
INSERT INTO "baton".election_log
	(name, seq, kind, holder, incarnation, token, transfer, time)
SELECT p_name, coalesce(max(l.seq), 0) + 1, p_event, rec.holder,
	rec.incarnation, rec.token, rec.transfer, rec.updated
FROM "baton".election_log l WHERE l.name = p_name;
	END IF;
	-- Delivered on commit. A payload must stay under 8000 bytes;
	-- an empty one wakes every watcher.
	PERFORM pg_notify('baton_baton',
CASE WHEN octet_length(p_name) < 7900 THEN p_name ELSE '' END);
	RETURN QUERY SELECT true, rec.holder, rec.incarnation, rec.token,
rec.lease_ns, rec.transfer, rec.version, rec.updated;
END
$fn$;
INSERT INTO "baton".meta (key, value) VALUES ('schema_version', '2');
INSERT INTO "baton".meta (key, value) VALUES ('store_id', gen_random_uuid()::text) ON CONFLICT (key) DO NOTHING;
