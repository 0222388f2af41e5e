-- A baton store of schema version 6, as baton wrote it before version 7
-- (the session record's successor columns and the session index): written
-- by that baton's own code (Swap, SwapMany, EnsureJob, SwapRun on a clock
-- stepping one second a read) and dumped by sqlite3's .dump. n1's session
-- holds a and b; n2's session is live.
PRAGMA journal_mode = WAL;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE baton_meta (
		key   TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT;
INSERT INTO baton_meta VALUES('schema_version',6);
INSERT INTO baton_meta VALUES('change_counter',7);
INSERT INTO baton_meta VALUES('store_id',886815917930472777);
CREATE TABLE baton_election (
		name        TEXT PRIMARY KEY,
		holder      TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		token       INTEGER NOT NULL CHECK (token >= 0),
		lease_ns    INTEGER NOT NULL,
		transfer    TEXT NOT NULL,
		version     INTEGER NOT NULL,
		updated_ns  INTEGER NOT NULL,
		session     TEXT NOT NULL DEFAULT '',
		changed     INTEGER NOT NULL DEFAULT 0,
		log_seq     INTEGER NOT NULL DEFAULT 0
	) STRICT;
INSERT INTO baton_election VALUES('@session/n1/i1/1','n1','i1',0,15000000000,'',1,1764547201000000000,'',1,0);
INSERT INTO baton_election VALUES('@session/n2/i2/1','n2','i2',0,15000000000,'',2,1764547202000000000,'',2,0);
INSERT INTO baton_election VALUES('a','n1','i1',1,15000000000,'',3,1764547203000000000,'@session/n1/i1/1',3,1);
INSERT INTO baton_election VALUES('b','n1','i1',1,15000000000,'',4,1764547204000000000,'@session/n1/i1/1',4,1);
INSERT INTO baton_election VALUES('billing','','',1,15000000000,'',7,1764547207000000000,'',7,2);
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
INSERT INTO baton_election_log VALUES('a',1,'acquired','n1','i1',1,'',1764547203000000000,'');
INSERT INTO baton_election_log VALUES('b',1,'acquired','n1','i1',1,'',1764547204000000000,'');
INSERT INTO baton_election_log VALUES('billing',1,'acquired','n1','i1',1,'',1764547205000000000,'');
INSERT INTO baton_election_log VALUES('billing',2,'released','','',1,'',1764547207000000000,'');
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
		created_ns INTEGER NOT NULL,
		suspended_ns   INTEGER NOT NULL DEFAULT 0,
		suspended_by   TEXT NOT NULL DEFAULT '',
		suspend_reason TEXT NOT NULL DEFAULT ''
	) STRICT;
INSERT INTO baton_jobs VALUES('billing','every 24h',1764547206000000000,0,'','');
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
INSERT INTO baton_runs VALUES('billing','2025-12-01T00:00:00Z',NULL,'done',1,'n1',1,0,NULL,NULL,0,'ok',6);
CREATE INDEX baton_election_changed ON baton_election (changed);
COMMIT;
