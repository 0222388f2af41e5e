package main

import (
	"fmt"
	"html"
	"os"
	"slices"
	"strings"

	"github.com/batonhq/baton/internal/lab/model"
)

// scanMeasures are the model's measures that 'model scan --svg' plots,
// one panel each.
var scanMeasures = []struct {
	key, label string
	v          func(model.Result) int
}{
	{"missed", "batches missed", func(r model.Result) int { return r.Missed }},
	{"doubleStarts", "double-started batches", func(r model.Result) int { return r.DoubleStarts }},
	{"delayedRounds", "delayed start rounds", func(r model.Result) int { return r.DelayedRounds }},
	{"leaderlessRounds", "leaderless rounds", func(r model.Result) int { return r.LeaderlessRounds }},
	{"twoLeaderRounds", "two-leader rounds", func(r model.Result) int { return r.TwoLeaderRounds }},
	{"handoverRounds", "handover rounds", func(r model.Result) int { return r.HandoverRounds }},
}

var seriesColors = []string{"#2f6fb3", "#c9453d", "#2e9b4f", "#e89a2c", "#8a5ac2", "#555555"}

// scanSVG plots a lease scan as a self-contained SVG: one panel per
// measure, the lease on the x axis, a line per outage. Every point is a
// circle carrying data-lease, data-outage and data-value, so a test (or a
// reader of the source) finds the model's numbers in it.
func scanSVG(p model.Params, points []model.ScanPoint, leases, outages []int) string {
	const (
		panelW, panelH = 300, 190
		padL, padB     = 40, 34
		cols           = 3
		top            = 54
	)
	rows := (len(scanMeasures) + cols - 1) / cols
	w, h := cols*panelW+20, top+rows*panelH+40
	ls := slices.Clone(leases)
	slices.Sort(ls)
	ls = slices.Compact(ls)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="11">`, w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>`)
	mode := "plain (no fencing, momentary trigger)"
	switch {
	case p.Fencing && p.PersistentTrigger:
		mode = "fencing and a persistent trigger"
	case p.Fencing:
		mode = "fencing"
	case p.PersistentTrigger:
		mode = "a persistent trigger"
	}
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="600">The lesson's round model as the lease varies: %s</text>`, html.EscapeString(mode))
	fmt.Fprintf(&b, `<text x="10" y="36" fill="#555">%d nodes, renewal every %d round(s), outage from round %d, %d rounds; one line per outage length (rounds):</text>`,
		p.Nodes, p.Renewal, p.Start, p.Rounds)
	x := 10.0 + 590
	for i, o := range outages {
		c := seriesColors[i%len(seriesColors)]
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="32" y2="32" stroke="%s" stroke-width="2.5"/><text x="%.0f" y="36">outage %d</text>`, x, x+18, c, x+22, o)
		x += 85
	}
	for mi, m := range scanMeasures {
		ox, oy := 10+(mi%cols)*panelW, top+(mi/cols)*panelH
		plotW, plotH := float64(panelW-padL-20), float64(panelH-padB-24)
		maxV := 1
		for _, pt := range points {
			maxV = max(maxV, m.v(pt.Result))
		}
		px := func(lease int) float64 {
			if len(ls) == 1 {
				return float64(ox+padL) + plotW/2
			}
			i := slices.Index(ls, lease)
			return float64(ox+padL) + float64(i)/float64(len(ls)-1)*plotW
		}
		py := func(v int) float64 { return float64(oy+20) + plotH - float64(v)/float64(maxV)*plotH }
		fmt.Fprintf(&b, `<g class="panel" data-measure="%s">`, m.key)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="600">%s</text>`, ox+padL, oy+12, m.label)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#999"/>`, ox+padL, ox+padL, py(maxV), py(0))
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999"/>`, ox+padL, float64(ox+padL)+plotW, py(0), py(0))
		for _, v := range []int{0, maxV} {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%d</text>`, ox+padL-5, py(v)+4, v)
		}
		for _, l := range ls {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%d</text>`, px(l), py(0)+14, l)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">lease (rounds)</text>`, float64(ox+padL)+plotW/2, py(0)+28)
		for si, o := range outages {
			c := seriesColors[si%len(seriesColors)]
			var pts []string
			var dots strings.Builder
			for _, l := range ls {
				for _, pt := range points {
					if pt.Lease == l && pt.Outage == o {
						v := m.v(pt.Result)
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(l), py(v)))
						fmt.Fprintf(&dots, `<circle class="point" cx="%.1f" cy="%.1f" r="3" fill="%s" data-lease="%d" data-outage="%d" data-value="%d"><title>lease %d, outage %d: %s %d</title></circle>`,
							px(l), py(v), c, l, o, v, l, o, m.label, v)
						break
					}
				}
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>%s`, c, strings.Join(pts, " "), dots.String())
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>` + "\n")
	return b.String()
}

// writeScanSVG writes scanSVG to path.
func writeScanSVG(path string, p model.Params, points []model.ScanPoint, leases, outages []int) error {
	if err := os.WriteFile(path, []byte(scanSVG(p, points, leases, outages)), 0o644); err != nil {
		return usagef("--svg: %v", err)
	}
	return nil
}
