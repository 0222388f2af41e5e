// Helpers that several packages' tests share: a concurrency-safe buffer
// and a check that a directory's files did not change.

package testenv

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent writers: a log destination
// for code under test that logs from several goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Files returns the sha256 of every file in dir, by name: a snapshot to
// show with SameFiles that a command wrote nothing.
func Files(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// SameFiles reports as test errors every file of before that changed or
// disappeared in after, and every file that appeared.
func SameFiles(t testing.TB, what string, before, after map[string][32]byte) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok {
			t.Errorf("%s: %s disappeared", what, k)
		} else if w != v {
			t.Errorf("%s: %s changed", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared (files now %v)", what, k, names(after))
		}
	}
}

func names(m map[string][32]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// WaitFor polls cond every 10ms until it holds (true) or d passes
// (false): for end-to-end tests on real time, with d the slack.
func WaitFor(d time.Duration, cond func() bool) bool {
	return WaitEvery(d, 10*time.Millisecond, cond)
}

// WaitEvery is WaitFor polling every interval: for a condition that costs
// a process or a connection to check (polled every 10ms, a baton status
// started as a process took more CPU than the processes it watched).
func WaitEvery(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
