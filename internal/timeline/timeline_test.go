package timeline

import (
	"encoding/xml"
	"strings"
	"testing"
)

// The SVG is well-formed XML, has one g.row per row, escapes every label
// and title, and places bars on the axis.
func TestSVG(t *testing.T) {
	c := Chart{Title: `a <b> & "c"`, From: 0, To: 10, Width: 340,
		Ticks: []Tick{{0, "r0"}, {10, "r10"}},
		Rows: []Row{
			{Label: "node-0", Spans: []Span{{From: 0, To: 5, Class: "led", Label: "token 1", Title: "<script>"}},
				Marks: []Mark{{At: 6, Shape: "cross", Class: "refused"}, {At: 7, Shape: "triangle"}, {At: 8, Shape: "diamond"}, {At: 9}}},
			{Label: "node-1"},
		},
		Bands: []Span{{From: 5, To: 6, Title: "gap"}},
	}
	svg := string(c.SVG())
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, svg)
	}
	if n := strings.Count(svg, `<g class="row"`); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
	if strings.Contains(svg, "<script>") || strings.Contains(svg, "<b>") {
		t.Fatalf("unescaped text:\n%s", svg)
	}
	// The bar from 0 to 5 starts at the label column and spans half the plot.
	if !strings.Contains(svg, `class="bar led" x="120.0"`) || !strings.Contains(svg, `width="92.0"`) {
		t.Fatalf("bar not on the axis:\n%s", svg)
	}
	if l := string(Legend(Item{Class: "led", Text: "x<y"}, Item{Class: "refused", Shape: "cross", Text: "z"})); strings.Contains(l, "x<y") {
		t.Fatalf("legend unescaped: %s", l)
	}
}
