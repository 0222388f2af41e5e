package sqlite

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"os"
)

// holdWriteLockEnv, set to a store's path, makes the test binary a
// process that holds the file's write lock (BEGIN IMMEDIATE on a
// connection of its own), says "held" on its standard output, waits for
// its standard input to close, commits and exits (see TestMain and
// TestCommitUnderwaySeesWriters).
const holdWriteLockEnv = "BATON_SQLITE_TEST_HOLD_WRITE_LOCK"

// holdWriteLock is that process; it returns the exit code.
func holdWriteLock(path string) int {
	db, err := sql.Open("sqlite", dsn(path, config{busyTimeout: DefaultBusyTimeout}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	tx, err := db.Begin() // BEGIN IMMEDIATE: the DSN's _txlock
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	io.Copy(io.Discard, bufio.NewReader(os.Stdin)) //nolint:errcheck // any end of the input ends the hold
	if err := tx.Commit(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// HoldWriteLockEnv and HoldWriteLock are holdWriteLockEnv and
// holdWriteLock for TestMain, in package sqlite_test.
const HoldWriteLockEnv = holdWriteLockEnv

// HoldWriteLock is holdWriteLock.
var HoldWriteLock = holdWriteLock
