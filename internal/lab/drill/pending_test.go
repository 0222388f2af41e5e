package drill

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/schedule"
)

// A period still open in the run ledger when a process-mode drill stopped
// its nodes is pending at the end: not lost, and its lines not missing.
// This is the load-average-30 case, where a drill reported such a period
// as "lost 1 batch (4000 invoice lines)".
func TestProcsResultPendingAtEnd(t *testing.T) {
	ctx := t.Context()
	p := DefaultParams()
	p.Round, p.Rounds, p.Triggers, p.InvoiceLines = 200*time.Millisecond, 13, []int{6, 12}, 10
	res, err := openResourceDB(filepath.Join(t.TempDir(), "invoices.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if err := createResource(ctx, res); err != nil {
		t.Fatal(err)
	}
	key := func(r int) string {
		return schedule.Key(vcluster.Calendar{Day: p.Round}.Wall(time.Duration(r) * p.Round))
	}
	t0 := time.Now()
	// Round 6's batch landed; round 12's did not.
	tx, err := res.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vcluster.WriteBatch(ctx, tx, vcluster.Batch{Period: key(6), Node: "node-1", Token: 2, Lines: p.InvoiceLines, Fence: true, Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO landings (period, token, node, at) VALUES (?, 2, 'node-1', ?)`, key(6), t0.Add(7*p.Round).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	d := &procDrill{p: p, col: FencingTrigger, t0: t0, procs: []*proc{{id: "node-0"}, {id: "node-1"}}}

	r, err := d.result(ctx, res, map[string]bool{key(12): true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Started != 1 || r.Missed != 0 || r.PendingAtEnd != 1 || r.MissingLines != 0 {
		t.Fatalf("round 12 pending in the ledger: started %d, missed %d, pending %d, missing lines %d; want 1, 0, 1, 0",
			r.Started, r.Missed, r.PendingAtEnd, r.MissingLines)
	}
	rep := Report{Params: p, Columns: map[Column]Result{FencingTrigger: r}}
	if v := rep.Verdicts(); !strings.Contains(v, "fencing+trigger  lost nothing, doubled nothing; 1 batch pending at the end") {
		t.Fatalf("verdicts do not say pending at the end:\n%s", v)
	}
	if tab := rep.Table(); !strings.Contains(tab, "batches pending at the end") {
		t.Fatalf("table has no pending row:\n%s", tab)
	}

	// Without the ledger's word the same rows are a lost batch.
	r, err = d.result(ctx, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Missed != 1 || r.PendingAtEnd != 0 || r.MissingLines != p.InvoiceLines {
		t.Fatalf("round 12 gone: missed %d, pending %d, missing lines %d; want 1, 0, %d", r.Missed, r.PendingAtEnd, r.MissingLines, p.InvoiceLines)
	}
	if tab := (Report{Params: p, Columns: map[Column]Result{FencingTrigger: r}}).Table(); strings.Contains(tab, "pending at the end") {
		t.Fatalf("table shows a pending row with nothing pending:\n%s", tab)
	}
}
