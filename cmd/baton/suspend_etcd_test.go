package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// suspend and resume on etcd: the job is suspended and resumed, the
// leader's record is untouched (its term goes on), and the election log
// shows both, in order after the record's own events.
func TestSuspendResumeEtcd(t *testing.T) {
	c := etcdtest.StartCluster(t, 1)
	const prefix = "/suspend-test/"
	url := "etcd://" + c.Endpoint(0) + "?prefix=" + prefix
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := etcd.Open(ctx, c.Endpoints(), etcd.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 3, Lease: time.Minute}, Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runBaton(t, "suspend", "--store", url, "--by", "ops@h1", "--reason", "bad deploy", "billing"); code != exitOK || !strings.Contains(out, "suspended billing (by ops@h1: bad deploy)") {
		t.Fatalf("suspend: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runBaton(t, "suspend", "--store", url, "billing"); code != exitFailure || !strings.Contains(errOut, "refused: billing is already suspended (by ops@h1 since ") {
		t.Errorf("second suspend: exit %d: %s", code, errOut)
	}
	if code, out, errOut := runBaton(t, "status", "--store", url, "billing"); code != exitOK || !strings.Contains(out, " by ops@h1: bad deploy (no period is claimed until 'baton resume')") {
		t.Errorf("status of a suspended job: exit %d\n%s%s", code, out, errOut)
	}
	if now, err := st.Get(ctx, "billing"); err != nil || now != rec {
		t.Errorf("the record after a suspension: %+v, %v; want it unchanged %+v", now, err, rec)
	}
	if code, out, errOut := runBaton(t, "resume", "--store", url, "--by", "dev@h2", "billing"); code != exitOK || !strings.Contains(out, "resumed billing (by dev@h2)") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runBaton(t, "history", "--store", url, "billing")
	if code != exitOK || !strings.Contains(out, "suspended  n1      3      -         by ops@h1: bad deploy") || !strings.Contains(out, "resumed    n1      3      -         by dev@h2") ||
		strings.Index(out, "acquired") > strings.Index(out, "suspended") || strings.Index(out, "suspended") > strings.Index(out, "resumed") {
		t.Errorf("history: exit %d\n%s%s", code, out, errOut)
	}
	if j, err := st.GetJob(ctx, "billing"); err != nil || j.Suspension.Active() {
		t.Errorf("job after resume: %+v, %v", j, err)
	}
}
