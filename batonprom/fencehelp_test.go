package batonprom_test

import (
	"strings"
	"testing"
)

// baton_fence_rejections_total's help says whose refusals it counts (the
// run ledger's, and those the program reports) and whose it does not (a
// job's own fence under baton run).
func TestFenceRejectionsHelpSaysWhose(t *testing.T) {
	m, reg := newMetrics(t)
	m.FenceRejected("billing") // a vector is gathered once it has a child
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "baton_fence_rejections_total" {
			continue
		}
		help := mf.GetHelp()
		for _, want := range []string{"Run-ledger writes", "FenceRejected", "job's own fence", "not counted"} {
			if !strings.Contains(help, want) {
				t.Errorf("help %q does not say %q", help, want)
			}
		}
		return
	}
	t.Fatal("baton_fence_rejections_total not registered")
}
