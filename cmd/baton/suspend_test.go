package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// suspend and resume: usage errors exit 2, an unknown name and a name
// that is no job exit 1 and write nothing, a second suspend is refused;
// status shows who and why, the election log both changes.
func TestSuspendResume(t *testing.T) {
	e, out, errb, ms := shared()
	ctx := context.Background()
	do := func(args ...string) result {
		o, eb := len(out.String()), len(errb.String())
		code := e.run(ctx, append(args[:1:1], append([]string{"--store", "mem:"}, args[1:]...)...))
		return result{code, out.String()[o:], errb.String()[eb:]}
	}
	if _, err := ms.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 3, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "svc", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"suspend"}, 2, "baton suspend: missing JOB"},
		{[]string{"resume", "a", "b"}, 2, ""},
		{[]string{"suspend", "--by", "", "billing"}, 2, "--by must not be empty"},
		{[]string{"suspend", "--reason", "a\x1bb", "billing"}, 2, "--reason must be printable"},
		{[]string{"suspend", "--reason", strings.Repeat("r", store.MaxReasonLen+1), "billing"}, 2, "at most 500 bytes"},
		{[]string{"resume", "--reason", strings.Repeat("r", 300) + "\n", "billing"}, 2, "--reason must be printable text"},
		{[]string{"suspend", "nosuch"}, 1, "baton suspend: nosuch: no election record, job or run of that name in this store"},
		{[]string{"resume", "nosuch"}, 1, "baton resume: nosuch: no election record, job or run of that name in this store"},
		{[]string{"suspend", "svc"}, 1, "svc is not a scheduled job"},
		{[]string{"resume", "billing"}, 1, "refused: billing is not suspended"},
	} {
		r := do(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.err) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("baton %q: %s; want exit %d and one line with %q", tc.args, r, tc.code, tc.err)
		}
	}
	if j, _ := ms.GetJob(ctx, "billing"); j.Suspension.Active() {
		t.Fatalf("a refused command suspended the job: %+v", j)
	}
	if r := do("suspend", "--help"); r.code != 0 || !strings.Contains(r.stdout, "caught up by the job's catch-up policy") {
		t.Errorf("suspend --help: %s", r)
	}

	long := strings.Repeat("é", store.MaxReasonLen/2) // 500 bytes
	if r := do("suspend", "--reason", long, "billing"); r.code != 0 {
		t.Fatalf("suspend with a reason of 500 bytes: %s", r)
	}
	if r := do("resume", "billing"); r.code != 0 {
		t.Fatalf("resume: %s", r)
	}
	if r := do("suspend", "billing", "--reason", "bad deploy", "--by", "ops@h1"); r.code != 0 || !strings.Contains(r.stdout, "suspended billing (by ops@h1: bad deploy)") {
		t.Fatalf("suspend: %s", r)
	}
	if rec, _ := ms.Get(ctx, "billing"); rec.Token != 3 || rec.Holder != "n1" || rec.Transfer != "" {
		t.Errorf("the record changed: %+v", rec)
	}
	if r := do("suspend", "billing"); r.code != 1 || !strings.Contains(r.stderr, "refused: billing is already suspended (by ops@h1 since ") {
		t.Errorf("second suspend: %s", r)
	}
	r := do("status", "billing")
	if r.code != 0 || !strings.Contains(r.stdout, "suspended: since ") || !strings.Contains(r.stdout, " by ops@h1: bad deploy (no period is claimed until 'baton resume')") {
		t.Errorf("status of a suspended job:\n%s", r)
	}
	if r := do("status", "--json", "billing"); !strings.Contains(r.stdout, `"suspended": {`) || !strings.Contains(r.stdout, `"by": "ops@h1"`) {
		t.Errorf("status --json of a suspended job:\n%s", r)
	}
	if r := do("resume", "billing", "--by", "dev@h2"); r.code != 0 || !strings.Contains(r.stdout, "resumed billing (by dev@h2)") {
		t.Fatalf("resume: %s", r)
	}
	if r := do("status", "billing"); strings.Contains(r.stdout, "suspended:") {
		t.Errorf("status after resume:\n%s", r)
	}
	r = do("history", "billing")
	if r.code != 0 || !strings.Contains(r.stdout, "suspended  n1      3      -         by ops@h1: bad deploy") || !strings.Contains(r.stdout, "resumed    n1      3      -         by dev@h2") {
		t.Errorf("history:\n%s", r)
	}
	// --stop asks the leader to resign as well.
	if r := do("suspend", "--stop", "billing"); r.code != 0 || !strings.Contains(r.stdout, "asked the leader n1 to resign") {
		t.Errorf("suspend --stop: %s", r)
	}
	if rec, _ := ms.Get(ctx, "billing"); rec.Transfer != store.AnyNode {
		t.Errorf("after suspend --stop the record is %+v, want a resignation requested", rec)
	}
}

// Real processes on one SQLite file: while the job is suspended no node
// runs a period (the run in progress at the suspension may finish), the
// leader keeps its term, and resume starts the periods again.
func TestProcessSuspend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its own SQLite file and processes
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "b.db")
	effects := filepath.Join(dir, "effects")
	lines := func() int {
		b, _ := os.ReadFile(effects)
		return strings.Count(string(b), "\n")
	}
	var logs []*syncBuffer
	for _, node := range []string{"a", "b", "c"} {
		cmd, _, errb := startBaton(t, "run", "--store", db, "--node", node, "--lease", "3s", "--grace", "1s", "--every", "1s",
			"job", "--", "sh", "-c", `echo "$BATON_PERIOD $BATON_TOKEN" >> `+effects)
		logs = append(logs, errb)
		// Stop each node with SIGTERM before the temporary directory is
		// removed: a SIGKILL left its running command writing the effects
		// file while the directory was being removed.
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return lines() >= 2 }) {
		t.Fatalf("no runs within 10s; logs:\n%s", logs[0].String())
	}
	e := &env{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	ctx := context.Background()
	if code := e.run(ctx, []string{"suspend", "--store", db, "--reason", "test", "job"}); code != 0 {
		t.Fatalf("suspend exited %d: %s", code, e.stderr)
	}
	// A period claimed just before the suspension may still run: wait a
	// poll and a run before counting.
	time.Sleep(1500 * time.Millisecond)
	at := lines()
	time.Sleep(3 * time.Second)
	if n := lines(); n != at {
		b, _ := os.ReadFile(effects)
		t.Fatalf("%d effect lines while suspended:\n%s", n-at, b)
	}
	if code := e.run(ctx, []string{"resume", "--store", db, "job"}); code != 0 {
		t.Fatalf("resume exited %d: %s", code, e.stderr)
	}
	if !testenv.WaitFor(5*time.Second, func() bool { return lines() > at }) {
		t.Fatalf("no run within 5s of the resume")
	}
	hist := &syncBuffer{}
	h := &env{stdout: hist, stderr: &syncBuffer{}}
	if code := h.run(ctx, []string{"history", "--store", db, "job"}); code != 0 || !strings.Contains(hist.String(), "suspended") || !strings.Contains(hist.String(), "resumed") {
		t.Errorf("history (exit %d):\n%s", code, hist)
	}
	// The leader kept its term: one acquisition, token 1 throughout.
	if strings.Count(hist.String(), "acquired") != 1 || strings.Contains(hist.String(), "taken-over") {
		t.Errorf("the suspension cost the leader its term:\n%s", hist)
	}
}

// The serve API and page show a suspension and the log's detail.
func TestServeSuspended(t *testing.T) {
	st, url := servedStore(t, "", time.Second)
	ctx := context.Background()
	if _, err := st.EnsureJob(ctx, store.Job{Name: "billing", Schedule: "every 1h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "n1", Incarnation: "i1", Token: 1, Lease: time.Second}, Event: store.Acquired}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SuspendJob(ctx, store.JobSuspend{Name: "billing", Suspend: true, By: "ops@h1", Reason: "<b>bad</b> deploy"}); err != nil {
		t.Fatal(err)
	}
	var d jobDetail
	getJSON(t, url+"/api/jobs/billing", http.StatusOK, &d)
	if d.Job == nil || d.Job.Suspended == nil || d.Job.Suspended.By != "ops@h1" || d.Job.Suspended.Reason != "<b>bad</b> deploy" {
		t.Fatalf("GET /api/jobs/billing: job %+v", d.Job)
	}
	if n := len(d.History); n != 2 || d.History[1].Kind != string(store.Suspended) || d.History[1].Detail != "by ops@h1: <b>bad</b> deploy" {
		t.Errorf("history %+v", d.History)
	}
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(page), "by ops@h1: &lt;b&gt;bad&lt;/b&gt; deploy") {
		t.Errorf("the page does not show the suspension, escaped:\n%s", page)
	}
}
