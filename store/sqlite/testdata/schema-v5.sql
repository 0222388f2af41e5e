-- A baton store of schema version 5, as baton wrote it before version 6
-- (the election record's log_seq): written by that baton's own code (Swap,
-- SwapMany, EnsureJob, SuspendJob, UpdateJob, SwapRun, Heartbeat on a
-- clock stepping one second a read) and dumped by sqlite3's .dump.
PRAGMA journal_mode = WAL;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE baton_meta (
		key   TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) STRICT;
INSERT INTO baton_meta VALUES('schema_version',5);
INSERT INTO baton_meta VALUES('last_change',11);
INSERT INTO baton_meta VALUES('store_id',7507322135225969131);
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
		changed     INTEGER NOT NULL DEFAULT 0
	) STRICT;
INSERT INTO baton_election VALUES('billing','n1','i1',1,15000000000,'',3,1764547206000000000,'',3);
INSERT INTO baton_election VALUES('a','n2','i2',2,15000000000,'',7,1764547210000000000,'',7);
INSERT INTO baton_election VALUES('b','n2','i2',2,15000000000,'',7,1764547210000000000,'',7);
INSERT INTO baton_election VALUES('free','','',1,15000000000,'',9,1764547212000000000,'',9);
INSERT INTO baton_election VALUES('@session/n3/i3/1','n3','i3',0,15000000000,'',10,1764547213000000000,'',10);
INSERT INTO baton_election VALUES('held','n3','i3',1,15000000000,'',11,1764547214000000000,'@session/n3/i3/1',11);
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
INSERT INTO baton_election_log VALUES('a',1,'acquired','n1','i1',1,'',1764547208000000000,'');
INSERT INTO baton_election_log VALUES('a',2,'taken-over-after-expiry','n2','i2',2,'',1764547210000000000,'');
INSERT INTO baton_election_log VALUES('b',1,'acquired','n1','i1',1,'',1764547209000000000,'');
INSERT INTO baton_election_log VALUES('b',2,'taken-over-after-expiry','n2','i2',2,'',1764547210000000000,'');
INSERT INTO baton_election_log VALUES('billing',1,'acquired','n1','i1',1,'',1764547201000000000,'');
INSERT INTO baton_election_log VALUES('billing',2,'suspended','n1','i1',1,'',1764547204000000000,'by ops: audit');
INSERT INTO baton_election_log VALUES('billing',3,'resumed','n1','i1',1,'',1764547205000000000,'by ops');
INSERT INTO baton_election_log VALUES('billing',4,'rescheduled','n1','i1',1,'',1764547206000000000,'every 24h -> every 12h');
INSERT INTO baton_election_log VALUES('free',1,'acquired','n2','i2',1,'',1764547211000000000,'');
INSERT INTO baton_election_log VALUES('free',2,'released','','',1,'',1764547212000000000,'');
INSERT INTO baton_election_log VALUES('held',1,'acquired','n3','i3',1,'',1764547214000000000,'');
CREATE TABLE baton_candidates (
		name        TEXT NOT NULL,
		node        TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		every_ns    INTEGER NOT NULL,
		since_ns    INTEGER NOT NULL,
		seen_ns     INTEGER NOT NULL,
		PRIMARY KEY (name, node)
	) STRICT, WITHOUT ROWID;
INSERT INTO baton_candidates VALUES('billing','n2','i2',5000000000,1764547207000000000,1764547207000000000);
CREATE TABLE baton_jobs (
		name       TEXT PRIMARY KEY,
		schedule   TEXT NOT NULL,
		created_ns INTEGER NOT NULL,
		suspended_ns   INTEGER NOT NULL DEFAULT 0,
		suspended_by   TEXT NOT NULL DEFAULT '',
		suspend_reason TEXT NOT NULL DEFAULT ''
	) STRICT;
INSERT INTO baton_jobs VALUES('billing','every 12h',1764547203000000000,0,'','');
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
INSERT INTO baton_runs VALUES('billing','2025-12-01T00:00:00Z',1764547200000000000,'done',1,'n1',1,0,1764547206000000000,1764547206000000000,0,'ok',4);
CREATE INDEX baton_election_changed ON baton_election (changed);
COMMIT;
