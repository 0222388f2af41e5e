package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// baton status on a three-member etcd cluster that lost two members: the
// survivor cannot decide, so status says the store is unavailable and what
// that means (degraded mode), in one line with exit status 1, not a usage
// error; once the members are back it reports the leader again.
func TestStatusEtcdQuorumLoss(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	c := etcdtest.StartCluster(t, 3)
	const prefix = "/status-test/"
	url := "etcd://" + c.Endpoint(0) + "?prefix=" + prefix + "&dial-timeout=2s&request-timeout=2s"

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Name: "billing", Holder: "a", Incarnation: "i1", Token: 7, Lease: 2 * time.Second}
	if _, err := st.Swap(ctx, store.Swap{Record: rec, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errOut := runBaton(t, "status", "--store", url, "billing")
	if code != exitOK || !strings.Contains(out, "holder:    a (incarnation i1)") || !strings.Contains(out, "token:     7") {
		t.Fatalf("status with a quorum: exit %d\n%s%s", code, out, errOut)
	}

	c.Stop(1)
	c.Stop(2)
	delay := testenv.MeasureDelay(t)
	start := time.Now()
	code, out, errOut = runBaton(t, "status", "--store", url, "billing")
	took := time.Since(start)
	t.Logf("status without a quorum, after %v: exit %d: %s", took.Round(time.Millisecond), code, errOut)
	if code != exitFailure || out != "" {
		t.Errorf("status without a quorum: exit %d, stdout %q; want exit %d and no output", code, out, exitFailure)
	}
	if strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr is not one line: %q", errOut)
	}
	for _, want := range []string{"baton status: store unavailable: etcd://" + c.Endpoint(0), "(no quorum?)", "nobody can lead until it is back (degraded mode)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not contain %q", errOut, want)
		}
	}
	// Bounded by the dial and request timeouts of the URL, with slack for a
	// loaded machine and the scheduling delay measured meanwhile.
	if bound := delay.Slack(8*time.Second, start, start.Add(took)); took > bound {
		t.Errorf("status without a quorum took %v, over %v", took, bound)
	}

	for _, i := range []int{1, 2} {
		if err := c.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitLeader(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runBaton(t, "status", "--store", url, "billing")
	if code != exitOK || !strings.Contains(out, "token:     7") {
		t.Fatalf("status after the members restarted: exit %d\n%s%s", code, out, errOut)
	}
}
