package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// --json writes a duration as the exact decimal of its seconds: a lease of
// 1777ms is 1.777 (time.Duration.Seconds gives 1.7770000000000001), in
// status, runs and sessions alike.
func TestJSONSecondsExact(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	sess := store.SessionPrefix + "n/1/1"
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: sess, Holder: "n", Incarnation: "1", Lease: 1777 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Event: store.Acquired, Record: store.Record{Name: "billing", Holder: "n", Incarnation: "1", Token: 1, Lease: 1777 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	sched := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "2026-03-01T02:00:00Z", Scheduled: sched, State: store.Done,
		Token: 1, Holder: "n", Attempt: 1, Started: sched.Add(1777 * time.Millisecond), Finished: sched.Add(3 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--json", "billing"}, `"lease_seconds":1.777`},
		{[]string{"runs", "--json", "billing"}, `"delay_seconds":1.777`},
		{[]string{"sessions", "--json"}, `"lease_seconds":1.777`},
	} {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append(tc.args, "--store", "mem:"))
		got := strings.ReplaceAll(out.String()[o:], " ", "")
		if code != exitOK || !strings.Contains(got, tc.want) || strings.Contains(got, "0000000") {
			t.Errorf("baton %s: exit %d, want %s:\n%s%s", strings.Join(tc.args, " "), code, tc.want, out.String()[o:], errb.String()[eb:])
		}
	}
}
