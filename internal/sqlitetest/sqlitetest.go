// Package sqlitetest damages SQLite stores on purpose, for the tests of
// what baton does with a store it cannot trust.
package sqlitetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlite"
)

// CorruptLedger creates the store at path, fills the ledger of job with
// enough rows to span many pages, closes it, and overwrites the second half
// of the file's pages (ledger rows only: the tables' root pages come
// first) with garbage, as a failing disk would.
func CorruptLedger(t testing.TB, path, job string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Repeat("x", 2000)
	for i := range 200 {
		r := store.Run{Job: job, Period: fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60, i%60), State: store.Done, Token: 1, Output: out}
		if _, err := s.SwapRun(ctx, store.RunSwap{Run: r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatalf("the WAL survived Close: the corruption would not reach the ledger")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	pages := fi.Size() / page
	if pages < 40 {
		t.Fatalf("the store has %d pages; want the ledger to span many", pages)
	}
	garbage := bytes.Repeat([]byte{0xA5}, page)
	for p := pages / 2; p < pages; p++ {
		if _, err := f.WriteAt(garbage, p*page); err != nil {
			t.Fatal(err)
		}
	}
}
