package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// 'baton status' without NAME lists the names a page at a time, with
// their state, holder, token and, for a job, schedule and next due; the
// last line gives the cursor of the next page; --all reads every page.
func TestStatusList(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
	st, err := storeurl.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		r := store.Record{Name: fmt.Sprintf("n-%02d", i), Holder: "node-a", Incarnation: "a1", Token: uint64(i + 1), Lease: time.Hour}
		if i%3 == 0 {
			r.Holder, r.Incarnation = "", ""
		}
		if _, err := st.Swap(t.Context(), store.Swap{Record: r, Event: store.Acquired}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.EnsureJob(t.Context(), store.Job{Name: "n-01", Schedule: "every 1h0m0s; catch-up latest"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errOut := runBaton(t, "status", "--store", url, "--limit", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+5+2 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[7], "--cursor n-04") {
		t.Fatalf("first page:\n%s", out)
	}
	if !strings.Contains(lines[1], "n-00") || !strings.Contains(lines[1], "free") || !strings.Contains(lines[2], "held") ||
		!strings.Contains(lines[2], "node-a") || !strings.Contains(lines[2], "every 1h0m0s") {
		t.Fatalf("rows:\n%s", out)
	}
	code, out, _ = runBaton(t, "status", "--store", url, "--limit", "5", "--cursor", "n-04")
	if code != exitOK || !strings.Contains(out, "n-05") || strings.Contains(out, "n-04 ") {
		t.Fatalf("second page: %d\n%s", code, out)
	}
	code, out, _ = runBaton(t, "status", "--store", url, "--limit", "5", "--all", "--state", "held")
	if code != exitOK || strings.Count(out, "held") != 8 || !strings.HasSuffix(out, "8 names shown\n") {
		t.Fatalf("--all --state held: %d\n%s", code, out)
	}
	code, out, _ = runBaton(t, "status", "--store", url, "--json", "--limit", "3", "--holder", "node-a")
	var l statusList
	if err := json.Unmarshal([]byte(out), &l); code != exitOK || err != nil || len(l.Jobs) != 3 || l.Next != "n-04" || l.Jobs[0].Job == nil {
		t.Fatalf("--json: %d %v\n%s", code, err, out)
	}
	for _, bad := range [][]string{
		{"status", "--store", url, "--limit", "0"},
		{"status", "--store", url, "--limit", "100000"},
		{"status", "--store", url, "--state", "asleep"},
		{"status", "--store", url, "--observe", "1s"},
		{"status", "--store", url, "--limit", "5", "n-01"},
	} {
		if code, _, errOut := runBaton(t, bad...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d %q; want a one-line usage error", bad, code, errOut)
		}
	}
}
