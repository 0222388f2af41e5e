-- A baton store of schema version 2, as baton wrote it before version 3
-- (sessions): its tables exactly, and a few rows of each.
PRAGMA journal_mode = WAL;
CREATE TABLE baton_meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) STRICT;
CREATE TABLE baton_election (
	name        TEXT PRIMARY KEY,
	holder      TEXT NOT NULL,
	incarnation TEXT NOT NULL,
	token       INTEGER NOT NULL CHECK (token >= 0),
	lease_ns    INTEGER NOT NULL,
	transfer    TEXT NOT NULL,
	version     INTEGER NOT NULL,
	updated_ns  INTEGER NOT NULL
) STRICT;
CREATE TABLE baton_election_log (
	name        TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	kind        TEXT NOT NULL,
	holder      TEXT NOT NULL,
	incarnation TEXT NOT NULL,
	token       INTEGER NOT NULL,
	transfer    TEXT NOT NULL,
	time_ns     INTEGER NOT NULL,
	detail      TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (name, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE baton_candidates (
	name        TEXT NOT NULL,
	node        TEXT NOT NULL,
	incarnation TEXT NOT NULL,
	every_ns    INTEGER NOT NULL,
	since_ns    INTEGER NOT NULL,
	seen_ns     INTEGER NOT NULL,
	PRIMARY KEY (name, node)
) STRICT, WITHOUT ROWID;
CREATE TABLE baton_jobs (
	name       TEXT PRIMARY KEY,
	schedule   TEXT NOT NULL,
	created_ns INTEGER NOT NULL
) STRICT;
CREATE TABLE baton_runs (
	job          TEXT NOT NULL,
	period       TEXT NOT NULL,
	scheduled_ns INTEGER,
	state        TEXT NOT NULL,
	token        INTEGER NOT NULL CHECK (token >= 0),
	holder       TEXT NOT NULL,
	attempt      INTEGER NOT NULL,
	manual       INTEGER NOT NULL,
	started_ns   INTEGER,
	finished_ns  INTEGER,
	exit_code    INTEGER NOT NULL,
	output       TEXT NOT NULL,
	version      INTEGER NOT NULL,
	PRIMARY KEY (job, period)
) STRICT;
INSERT INTO baton_meta (key, value) VALUES ('schema_version', 2), ('last_version', 4), ('store_id', 48879);
INSERT INTO baton_election VALUES
	('billing', 'n1', 'i1', 2, 15000000000, '', 3, 1764547200000000000),
	('free', '', '', 1, 15000000000, '', 4, 1764547201000000000);
INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns) VALUES
	('billing', 1, 'acquired', 'n0', 'i0', 1, '', 1764540000000000000),
	('billing', 2, 'taken-over-after-expiry', 'n1', 'i1', 2, '', 1764547200000000000),
	('free', 1, 'acquired', 'n2', 'i2', 1, '', 1764547100000000000),
	('free', 2, 'released', '', '', 1, '', 1764547201000000000);
INSERT INTO baton_candidates VALUES ('billing', 'n2', 'i2', 5000000000, 1764547100000000000, 1764547200000000000);
INSERT INTO baton_jobs VALUES ('billing', 'every 24h', 1764460800000000000);
INSERT INTO baton_runs VALUES
	('billing', '2026-12-01T00:00:00Z', 1764547200000000000, 'done', 2, 'n1', 1, 0, 1764547200000000000, 1764547260000000000, 0, 'ok', 2);
