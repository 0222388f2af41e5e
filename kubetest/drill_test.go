package kubetest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/drill"
	"github.com/batonhq/baton/internal/testenv"
)

// drillRound is the drill's round on the API server: the process drill's
// default (200 ms; a lease of 3 rounds, 600 ms, e 25 ms), as on SQLite.
const drillRound = 200 * time.Millisecond

// testDrill is issue #46 item 7: the lesson's drill on the Lease store,
// `baton drill --procs --store kube://NS?kubeconfig=F` (the CLI built with
// -tags kube), every fault of the process drill: five node processes
// (baton.Elector and the scheduler's runner, as in 'baton run') on one
// namespace's Leases, real signals and real time. Each fault's report
// (--json) is judged by the drill's own checks, as its tests judge it on
// SQLite (drill.Report): fencing+trigger starts every batch once and loses
// or duplicates no line, no column has two running leaders, the handover
// after crash, unreachable and pause comes within lease + 2e + one poll of
// the fault plus half a round and the scheduling delay measured meanwhile,
// and the columns without a protection show their harm. A fault whose
// handover came late or whose harm did not show is run again, up to
// twice (as TestProcsGuarantees does); safety is asserted on every run.
func (e *env) testDrill(t *testing.T) {
	cli := e.batonCLI(t)
	storeURL := "kube://" + e.namespace(t) + "?kubeconfig=" + e.kubeconfig(t)
	delay := testenv.MeasureDelay(t)
	const tries = 3
	for _, f := range drill.Faults {
		for try := 1; ; try++ {
			start := time.Now()
			cmd := exec.Command(cli, "drill", "--procs", "--store", storeURL, "--fault", string(f),
				"--round", drillRound.String(), "--rounds", "13", "--triggers", "6,12", "--json")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("baton drill --procs --store kube://... --fault %s: %v\n%s%s", f, err, out.String(), errb.String())
			}
			var rep drill.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("the drill's report: %v\n%s", err, out.String())
			}
			slack := delay.Slack(rep.Params.Round/2, start, time.Now())
			jobs := make([]string, 0, len(drill.Columns))
			for _, c := range drill.Columns {
				jobs = append(jobs, rep.Columns[c].Job)
			}
			t.Logf("%s (run %d, handover bound %v + slack %v; jobs %s)\n%s", f, try, rep.Params.HandoverBound(), slack, strings.Join(jobs, ", "), rep.Table())
			for _, u := range rep.Unsafe() {
				t.Error(u)
			}
			for _, c := range drill.Columns {
				if !strings.HasPrefix(rep.Columns[c].Job, "billing-") {
					t.Errorf("%s, %s: job %q; want a job of the run's own on the shared namespace", f, c, rep.Columns[c].Job)
				}
			}
			late := append(rep.LateHandovers(slack), rep.Undemonstrated()...)
			if len(late) == 0 {
				break
			}
			if try == tries {
				for _, l := range late {
					t.Error(l)
				}
				break
			}
			t.Logf("%s, run %d: %s; running it again", f, try, strings.Join(late, "; "))
		}
	}
}
