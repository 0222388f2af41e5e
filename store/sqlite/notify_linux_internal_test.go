package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// TestCommitUnderwaySeesWriters: a commit is reported under way while a
// Store of this process holds its write turn (from before BEGIN
// IMMEDIATE to after the commit) and while another process holds the
// file's write lock (its BEGIN IMMEDIATE, before its commit), and not
// before or after either; a probe that finds no descriptor of the -shm
// file reports one under way (it cannot know).
func TestCommitUnderwaySeesWriters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "baton.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	probe := newSHMProbe(path + "-shm")
	if s.commitUnderway(probe) {
		t.Fatal("a commit is reported under way with no write")
	}
	var during bool
	if err := s.write(ctx, "test", func(tx *sql.Tx) error {
		during = s.commitUnderway(probe)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !during {
		t.Fatal("no commit reported under way inside a write of this process: a poll would end its retries before the commit is published")
	}
	if s.commitUnderway(probe) {
		t.Fatal("a commit is reported under way after the write")
	}

	// Another process: the test binary, holding BEGIN IMMEDIATE until its
	// standard input closes (TestMain, holdWriteLockEnv).
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdWriteLockEnv+"="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		in.Close()
		cmd.Wait()
		t.Fatalf("the other process: %q, %v", line, err)
	}
	held := s.commitUnderway(probe)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	if !held {
		t.Fatal("no commit reported under way while another process holds the write lock")
	}
	if s.commitUnderway(probe) {
		t.Fatal("a commit is reported under way after the other process committed")
	}
	if !newSHMProbe(filepath.Join(t.TempDir(), "none-shm")).foreignWriter() {
		t.Fatal("a probe of a file with no descriptor open reports no writer: it must report one (it cannot know)")
	}
}

// TestWriteEndsWakeRetries: on Linux, a commit wakes the change feed's
// poller, whose retries end at the first poll that follows a moment
// when no commit was under way: a few polls for the commit, not the
// eleven of the whole ladder (1, 2, 4 ... 512 ms). Real time, as
// TestIdleFeedPollsRarely; the bound leaves the write lock 63ms to be
// released, under load.
func TestWriteEndsWakeRetries(t *testing.T) {
	t.Parallel() // 3 s of waiting on its own file
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: "a", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	feed := s.WatchChanges(ctx)
	go func() {
		for range feed {
		}
	}()
	polls := func() int64 {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		return s.hub.polls
	}
	time.Sleep(1500 * time.Millisecond) // the watch's first wake and its retries
	p0 := polls()
	if _, err := s.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil { // a renewal: a commit
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	n := polls() - p0
	t.Logf("%d polls in the 1.2 s after a commit", n)
	// The commit's wake and its retries while the lock is held (at most 6
	// within 63ms), and the periodic poll.
	if n > 7 {
		t.Fatalf("%d polls in the 1.2 s after one commit, want at most 7: the wake's retries do not end once the commit is published", n)
	}
}
