package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/lab/model"
)

// 'model scan --svg' plots every run of the scan: a well-formed SVG with a
// panel per measure and, in each, a point per lease and outage whose value
// is the model's.
func TestModelScanSVG(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scan.svg")
	code, _, stderr := runBaton(t, "model", "scan", "--fencing", "--leases", "1,3,5", "--outages", "2,5", "--svg", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Panels []struct {
			Measure string `xml:"data-measure,attr"`
			Points  []struct {
				Lease  int `xml:"data-lease,attr"`
				Outage int `xml:"data-outage,attr"`
				Value  int `xml:"data-value,attr"`
			} `xml:"circle"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not well-formed SVG: %v", err)
	}
	if len(doc.Panels) != len(scanMeasures) {
		t.Fatalf("%d panels, want %d", len(doc.Panels), len(scanMeasures))
	}
	p := model.DefaultParams()
	p.Fencing = true
	for i, panel := range doc.Panels {
		m := scanMeasures[i]
		if panel.Measure != m.key || len(panel.Points) != 6 {
			t.Fatalf("panel %d: %s with %d points", i, panel.Measure, len(panel.Points))
		}
		for _, pt := range panel.Points {
			q := p
			q.Lease, q.Outage = pt.Lease, pt.Outage
			if want := m.v(model.Run(q)); pt.Value != want {
				t.Errorf("%s at lease %d outage %d: plotted %d, the model says %d", m.key, pt.Lease, pt.Outage, pt.Value, want)
			}
		}
	}
	if code, _, stderr := runBaton(t, "model", "scan", "--svg", filepath.Join(t.TempDir(), "no", "such", "dir.svg")); code != exitUsage {
		t.Fatalf("unwritable --svg: exit %d %s", code, stderr)
	} else if want := "--svg"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q lacks %q", stderr, want)
	}
}
