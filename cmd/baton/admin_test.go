package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// seed writes an election history for billing (a acquired, b took over
// with token 2) and a done run that started 90s late.
func seed(t *testing.T, ms *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "i1", Token: 1, Lease: 15 * time.Second}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: store.Record{Name: "billing", Holder: "b", Incarnation: "i2", Token: 2, Lease: 15 * time.Second}, Event: store.TakenOver}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := ms.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "2026-01-01T00:00:00Z", Scheduled: at,
		State: store.Done, Token: 2, Holder: "b", Attempt: 1, Started: at.Add(90 * time.Second), Finished: at.Add(100 * time.Second), Output: "ok\n"}}); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func TestAdminCommands(t *testing.T) {
	e, out, errb, ms := shared()
	seed(t, ms)
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(context.Background(), append([]string{args[0], "--store", "mem:"}, args[1:]...))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}

	if r := do("status", "billing"); r.code != 0 || !strings.Contains(r.stdout, "holder:    b (incarnation i2)") ||
		!strings.Contains(r.stdout, "token:     2") || !strings.Contains(r.stdout, "no period pending or running") {
		t.Errorf("status:\n%s", r)
	}
	if r := do("history", "billing"); r.code != 0 || !strings.Contains(r.stdout, "acquired") || !strings.Contains(r.stdout, "taken-over-after-expiry") {
		t.Errorf("history:\n%s", r)
	}
	if r := do("runs", "billing"); r.code != 0 || !strings.Contains(r.stdout, "DELAY") || !strings.Contains(r.stdout, "1m30s") {
		t.Errorf("runs:\n%s", r)
	}
	r := do("runs", "--json", "billing")
	var views []inspect.Run
	if err := json.Unmarshal([]byte(r.stdout), &views); err != nil || len(views) != 1 || views[0].DelaySeconds != 90 || views[0].Output != "ok\n" {
		t.Errorf("runs --json: %v\n%s", err, r)
	}

	// A stale token is refused and nothing is written.
	r = do("resign", "billing", "--token", "1")
	if r.code != exitFailure || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "refused") || !strings.Contains(r.stderr, "token 2") {
		t.Errorf("resign with a stale token:\n%s", r)
	}
	if rec, _ := ms.Get(context.Background(), "billing"); rec.Transfer != "" {
		t.Errorf("a refused request wrote %+v", rec)
	}
	// A token no term has had yet is a wrong number, not a stale one.
	tokenAhead := func(cmd ...string) {
		t.Helper()
		r := do(append(cmd, "billing", "--token", "99")...)
		if r.code != exitFailure || strings.Count(r.stderr, "\n") != 1 || strings.Contains(r.stderr, "stale") ||
			!strings.Contains(r.stderr, "ahead of the current one") || !strings.Contains(r.stderr, "at token 2, the request expected 99") ||
			!strings.Contains(r.stderr, "omit --token") {
			t.Errorf("%s with a token ahead of the record's:\n%s", cmd[0], r)
		}
		if rec, _ := ms.Get(context.Background(), "billing"); rec.Transfer != "" {
			t.Errorf("a refused %s wrote %+v", cmd[0], rec)
		}
	}
	tokenAhead("resign")
	r = do("transfer", "--to", "ghost", "billing")
	if r.code != exitFailure || strings.Count(r.stderr, "\n") != 2 || !strings.Contains(r.stderr, "ghost is not campaigning") {
		t.Errorf("transfer to a node that does not campaign:\n%s", r)
	}
	if rec, _ := ms.Get(context.Background(), "billing"); rec.Transfer != "" {
		t.Errorf("a refused transfer wrote %+v", rec)
	}
	for _, n := range []string{"c", "d"} {
		if err := ms.Heartbeat(context.Background(), store.Candidate{Name: "billing", Node: n, Incarnation: n + "1", Every: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	r = do("transfer", "--to", "ghost", "billing")
	if r.code != exitFailure || !strings.Contains(r.stderr, "nodes waiting to take over: c, d") {
		t.Errorf("transfer to a node that does not campaign:\n%s", r)
	}
	tokenAhead("transfer", "--to", "c")
	r = do("transfer", "--to", "c", "billing")
	if r.code != 0 || !strings.Contains(r.stderr, "no --token given; using the current token 2") || !strings.Contains(r.stdout, "hand over to c") {
		t.Errorf("transfer without --token:\n%s", r)
	}
	if rec, _ := ms.Get(context.Background(), "billing"); rec.Transfer != "c" {
		t.Errorf("transfer not recorded: %+v", rec)
	}
	if r := do("resign", "--token", "2", "billing"); r.code != 0 {
		t.Errorf("resign:\n%s", r)
	}
	if rec, _ := ms.Get(context.Background(), "billing"); rec.Transfer != store.AnyNode {
		t.Errorf("resign not recorded: %+v", rec)
	}
	if r := do("status", "--json", "billing"); r.code != 0 || !strings.Contains(r.stdout, `"transfer": "*"`) {
		t.Errorf("status --json:\n%s", r)
	}
	if r := do("history", "billing"); r.code != 0 || !strings.Contains(r.stdout, "any (resign)") {
		t.Errorf("history shows the resign request as a transfer to %q, not any (resign):\n%s", store.AnyNode, r)
	}

	// Manual triggers.
	if r := do("trigger", "--period", "2026-01-02T00:00:00Z", "billing"); r.code != 0 || !strings.Contains(r.stdout, "pending") {
		t.Errorf("trigger:\n%s", r)
	}
	if r := do("status", "billing"); !strings.Contains(r.stdout, "pending or running:") || !strings.Contains(r.stdout, "2026-01-02T00:00:00Z  pending") {
		t.Errorf("status after trigger:\n%s", r)
	}
	if r := do("trigger", "billing", "--period", "2026-01-01T00:00:00Z"); r.code != exitFailure || !strings.Contains(r.stderr, "already done") {
		t.Errorf("trigger of a done period:\n%s", r)
	}
	if r := do("trigger", "other"); r.code != exitFailure || !strings.Contains(r.stderr, "other: no election record, job or run of that name in this store; nothing written") {
		t.Errorf("trigger of an unknown job without --create:\n%s", r)
	}
	if rs, _ := ms.Runs(context.Background(), "other", "", 0); len(rs) != 0 {
		t.Errorf("a refused trigger wrote %+v", rs)
	}
	if r := do("trigger", "--create", "other"); r.code != 0 || !strings.Contains(r.stderr, `warning: no scheduled job "other"`) {
		t.Errorf("trigger --create of a job nobody registered (kept, with a warning):\n%s", r)
	}
	if rs, _ := ms.Runs(context.Background(), "other", "", 0); len(rs) != 1 || !rs[0].Manual || rs[0].State != store.Pending {
		t.Errorf("trigger now wrote %+v", rs)
	}
}

func TestAdminBadInput(t *testing.T) {
	tests := [][]string{
		{"status", "--limit", "0"}, // without NAME status lists the names
		{"status", "--state", "asleep"},
		{"status", "a", "b"},
		{"runs"},
		{"runs", "--limit", "-1", "j"},
		{"runs", "--before", "bogus", "j"},
		{"trigger"},
		{"trigger", "--period", "tomorrow", "j"},
		{"trigger", "--period", "2026-01-02T00:00:00+01:00", "j"},
		{"resign"},
		{"resign", "--token", "x", "j"},
		{"transfer", "j"},
		{"status", "--store", "nope", "j"},
	}
	for _, args := range tests {
		e, _, errb, ms := shared()
		code := e.run(context.Background(), args)
		checkOneLine(t, args, code, errb.String())
		untouched(t, ms, "j")
	}
	e, _, errb, _ := shared()
	code := e.run(context.Background(), []string{"status", "--store", "mem:", "j"})
	if code != exitFailure || !strings.Contains(errb.String(), "no election record") {
		t.Errorf("status of an unknown name: exit %d %q", code, errb.String())
	}
	// A schedule that never fires is a usage error in next too.
	for _, args := range [][]string{{"next", "--cron", "0 0 30 2 *"}, {"next", "--cron", "0 0 31 4 *", "--json"}} {
		e, _, errb, _ := shared()
		if code := e.run(context.Background(), args); code != exitUsage || !strings.Contains(errb.String(), "no date within five years") {
			t.Errorf("%v: exit %d %q", args, code, errb.String())
		}
	}
	// Every command on a name the store knows nothing of says the same.
	for _, args := range [][]string{{"status"}, {"next"}, {"runs"}, {"history"}, {"prune"}, {"trigger"}, {"resign"}, {"transfer", "--to", "n"}} {
		e, _, errb, ms := shared()
		code := e.run(context.Background(), append(append(args, "--store", "mem:"), "nosuch"))
		if code != exitFailure || !strings.Contains(errb.String(), "nosuch: no election record, job or run of that name in this store") {
			t.Errorf("%v of an unknown name: exit %d %q", args, code, errb.String())
		}
		untouched(t, ms, "nosuch")
	}
}

// 'baton history' without NAME lists the names a page at a time, as status
// does, each with the last --events events of its log.
func TestHistoryWithoutName(t *testing.T) {
	e, out, errb, ms := shared()
	seed(t, ms)
	ctx := context.Background()
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "audit", Holder: "c", Incarnation: "i3", Token: 1, Lease: 15 * time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append([]string{"history", "--store", "mem:"}, args...))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}
	r := do()
	if r.code != 0 || !strings.Contains(r.stdout, "audit: held") || !strings.Contains(r.stdout, "billing: held") ||
		strings.Count(r.stdout, "acquired") != 2 || !strings.Contains(r.stdout, "taken-over-after-expiry") || !strings.Contains(r.stdout, "2 names shown\n") {
		t.Errorf("history without NAME:\n%s", r)
	}
	// --events 1: billing's last event only.
	if r := do("--events", "1", "--prefix", "bill"); r.code != 0 || strings.Contains(r.stdout, "acquired") || !strings.Contains(r.stdout, "taken-over-after-expiry") {
		t.Errorf("history --events 1 --prefix bill:\n%s", r)
	}
	// A page of one says how to read the next.
	if r := do("--limit", "1"); r.code != 0 || !strings.Contains(r.stdout, "1 names shown; more: baton history --cursor audit (or --all)") || strings.Contains(r.stdout, "billing") {
		t.Errorf("history --limit 1:\n%s", r)
	}
	r = do("--json", "--limit", "1", "--cursor", "audit")
	var got struct {
		Names []struct {
			Name   string `json:"name"`
			Events []struct {
				Kind  string `json:"kind"`
				Token uint64 `json:"token"`
			} `json:"events"`
		} `json:"names"`
		Next string `json:"next"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("history --json: %v\n%s", err, r)
	}
	if len(got.Names) != 1 || got.Names[0].Name != "billing" || len(got.Names[0].Events) != 2 || got.Names[0].Events[1].Token != 2 {
		t.Errorf("history --json --cursor audit: %+v", got)
	}
}
