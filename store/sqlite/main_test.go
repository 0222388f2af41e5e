package sqlite_test

import (
	"os"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store/sqlite"
)

// The real-time tests (the elector's scenarios, the idle feed, a store
// overwritten under a running elector) mostly wait on leases: unless
// -test.parallel is given, eight run at once instead of one per CPU. In CI
// (testenv.Long) they run one at a time (testenv.ParallelUnlessLong).
func TestMain(m *testing.M) {
	if path := os.Getenv(sqlite.HoldWriteLockEnv); path != "" {
		os.Exit(sqlite.HoldWriteLock(path)) // a process of TestCommitUnderwaySeesWriters
	}
	if !testenv.Long() {
		testenv.DefaultParallel(8)
	}
	os.Exit(testenv.Run(m))
}
