//go:build !nolab

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
)

// In its own file: countStore is bench's (countstore.go), which the
// release build (-tags nolab) leaves out.

// 'baton trigger' of a registered job reads the job once and the row once
// around its one write; of a pending row, it writes nothing.
func TestTriggerReadsOnce(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1m0s; catch-up all, max 100"}); err != nil {
		t.Fatal(err)
	}
	var n storeCounts
	e.open = func(ctx context.Context, url string) (store.Store, error) { return countStore(ms.Client(""), &n), nil }
	args := []string{"trigger", "--store", "mem:", "--period", "2026-01-01T00:00:00Z", "billing"}
	if code := e.run(ctx, args); code != exitOK || !strings.Contains(out.String(), "pending") {
		t.Fatalf("trigger: exit %d\n%s%s", code, out, errb)
	}
	if r, w := n.readCalls.Load(), n.writeCalls.Load(); r != 2 || w != 1 {
		t.Errorf("trigger made %d reads and %d writes; want 2 (the job, the row) and 1", r, w)
	}
	n = storeCounts{}
	if code := e.run(ctx, args); code != exitOK || !strings.Contains(out.String(), "already pending") {
		t.Fatalf("trigger again: exit %d\n%s%s", code, out, errb)
	}
	if r, w := n.readCalls.Load(), n.writeCalls.Load(); r != 2 || w != 0 {
		t.Errorf("trigger of a pending row made %d reads and %d writes; want 2 and 0", r, w)
	}
}
