package fence

// The portable SQLite fence: SQL for any SQLite binding or the sqlite3
// command-line shell, with no Go on the resource side. It shares its table
// with CheckTx's SQLite dialect, so a Go writer and, say, a Python writer
// fence each other.

// SQLiteDDL creates the fence table of SQLite (the same statement as
// CreateTable with the SQLite dialect, so an existing table is kept) and
// three triggers that refuse, with RAISE(ROLLBACK), an update that lowers
// a token (SQLiteStaleMessage) and a row with an empty name or a token
// that is not an integer of at least 1 (SQLiteInvalidMessage). Every
// statement is idempotent. Run it once, as a migration: from sqlite3,
// .read it; from Python, executescript.
//
// The triggers change nothing CheckTx does: its upsert never lowers a
// token and never writes token 0, so they never fire for it. They also
// stop a hand-written UPDATE that would lower a token.
const SQLiteDDL = `CREATE TABLE IF NOT EXISTS ` + DefaultTable + ` (name TEXT PRIMARY KEY, token INTEGER NOT NULL) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS baton_fence_invalid_insert BEFORE INSERT ON ` + DefaultTable + `
WHEN typeof(NEW.name) <> 'text' OR NEW.name = '' OR typeof(NEW.token) <> 'integer' OR NEW.token < 1
BEGIN SELECT RAISE(ROLLBACK, '` + SQLiteInvalidMessage + `'); END;

CREATE TRIGGER IF NOT EXISTS baton_fence_invalid_update BEFORE UPDATE ON ` + DefaultTable + `
WHEN typeof(NEW.name) <> 'text' OR NEW.name = '' OR typeof(NEW.token) <> 'integer' OR NEW.token < 1
BEGIN SELECT RAISE(ROLLBACK, '` + SQLiteInvalidMessage + `'); END;

CREATE TRIGGER IF NOT EXISTS baton_fence_stale BEFORE UPDATE OF token ON ` + DefaultTable + `
WHEN typeof(NEW.token) = 'integer' AND NEW.token < OLD.token
BEGIN SELECT RAISE(ROLLBACK, '` + SQLiteStaleMessage + `'); END;
`

// SQLiteCheck is the fence check to run inside the caller's transaction,
// first, with the named parameters :name (BATON_NAME) and :token
// (BATON_TOKEN, bound as an integer). It raises the stored token to
// :token, or, when :token is lower than the one stored, fails with the
// error SQLiteStaleMessage (SQLITE_CONSTRAINT_TRIGGER) after SQLite has
// rolled the whole transaction back: nothing done in it before commits,
// and the transaction is over.
//
// What the client must do on that error is stop: not run the rest of the
// transaction's statements, which SQLite would now run outside any
// transaction, each committing on its own. The sqlite3 shell stops with
// -bail (or .bail on); Python's sqlite3 raises sqlite3.IntegrityError,
// which ends a `with conn:` block (its rollback then has nothing left to
// undo); in Go, CheckTx gives ErrStaleToken instead. A COMMIT after the
// error fails with "no transaction is active", so a script that goes on
// regardless is visible.
//
// SQLite runs one writing transaction at a time, so the check is atomic
// with the work; begin the transaction with BEGIN IMMEDIATE so that a
// transaction that reads first cannot fail with SQLITE_BUSY at its first
// write, and set a busy timeout.
const SQLiteCheck = `INSERT INTO ` + DefaultTable + ` (name, token) VALUES (:name, :token)
  ON CONFLICT (name) DO UPDATE SET token = excluded.token;
`

// The messages of the errors SQLiteDDL's triggers raise.
const (
	// SQLiteStaleMessage: the token is lower than the highest accepted
	// for the name; a newer leader wrote.
	SQLiteStaleMessage = "baton_fence: stale token (a newer leader wrote): transaction rolled back"
	// SQLiteInvalidMessage: an empty name, or a token that is not an
	// integer of at least 1.
	SQLiteInvalidMessage = "baton_fence: invalid name or token (want a non-empty name and an integer token of at least 1): transaction rolled back"
)
