package main

import (
	"context"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/postgres"
)

// baton run on a PostgreSQL store, as a real process: it creates the
// schema on first use, runs the command once per one-second period with
// the fencing token in its environment, records each period done in the
// ledger, and on SIGTERM releases the lease and exits 0.
func TestRunOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t)
	u, err := url.Parse(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", "jobs") // not the default schema: the parameter reaches the store
	u.RawQuery = q.Encode()
	storeURL := u.String()
	cmd, out, errb := startBaton(t, "run", "--store", storeURL, "--node", "n1", "--lease", "3s", "--every", "1s",
		"billing", "--", "sh", "-c", `echo "period=$BATON_PERIOD token=$BATON_TOKEN"`)
	// Two periods done, however slowly the process starts (the race
	// detector's binary on a loaded machine takes a second or more): wait
	// for them in its log rather than for a fixed time.
	testenv.WaitFor(20*time.Second, func() bool { return strings.Count(errb.String(), "period finished: done") >= 2 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("baton: %v\nstderr:\n%s", err, errb.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.Runs(ctx, "billing", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, r := range rs {
		if r.State != store.Done {
			continue
		}
		done++
		want := "period=" + r.Period + " token=1\n"
		if r.Output != want || r.Token != 1 || r.Holder != "n1" {
			t.Errorf("row %+v, want output %q under token 1 by n1", r, want)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if done < 2 {
		t.Fatalf("%d done rows in the ledger, want at least 2: %+v\nstderr:\n%s", done, rs, errb.String())
	}
	rec, err := st.Get(ctx, "billing")
	if err != nil || !rec.Free() || rec.Token != 1 {
		t.Errorf("election record %+v (%v), want free at token 1", rec, err)
	}
}
