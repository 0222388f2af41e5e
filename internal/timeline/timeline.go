// Package timeline draws who did what when as an inline SVG: one row per
// actor (a node, a holder), bars for the stretches it spent in a state
// (leading, paused, cut off), marks for instants (a trigger, a write the
// fence accepted or refused), and bands across all rows (a handover gap).
// The drill report and the status page of 'baton serve' both draw with it.
//
// The SVG carries class names only; the colours come from CSS (see CSS), so
// one stylesheet themes every chart of a page. It needs no script and loads
// nothing.
package timeline

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart is one timeline.
type Chart struct {
	// Title is drawn above the chart; empty for none.
	Title string
	// From and To bound the axis, in the caller's unit (rounds, seconds).
	From, To float64
	// Ticks are the labelled positions on the axis.
	Ticks []Tick
	// Rows are drawn top to bottom.
	Rows []Row
	// Bands shade a stretch across every row (e.g. "no leader").
	Bands []Span
	// Width is the drawing's width in pixels (default 860).
	Width int
}

// Tick is a labelled position on the axis.
type Tick struct {
	At    float64
	Label string
}

// Row is one actor's line.
type Row struct {
	Label string
	Spans []Span
	Marks []Mark
}

// Span is a stretch of time in a state. Class names the state for CSS;
// Label is drawn inside the bar when it fits; Title is the hover text.
type Span struct {
	From, To     float64
	Class        string
	Label, Title string
}

// Mark is an instant. Shape is "circle", "cross", "triangle" or "diamond".
type Mark struct {
	At           float64
	Shape, Class string
	Title        string
}

const (
	labelW = 120
	rowH   = 26
	barH   = 16
	top    = 22
	axisH  = 24
)

// CSS styles the charts: the classes used by the drill and the status page.
const CSS = `
svg.timeline { font: 11px system-ui, sans-serif; }
svg.timeline .title { font-weight: 600; font-size: 12px; }
svg.timeline .rowlabel { fill: #333; }
svg.timeline .grid { stroke: #ddd; }
svg.timeline .tick { fill: #666; }
svg.timeline .band { fill: #fbe3e3; }
svg.timeline .bar { stroke: #fff; stroke-width: 0.5; }
svg.timeline .barlabel { fill: #fff; font-size: 10px; pointer-events: none; }
svg.timeline .led, svg.timeline .held { fill: #2f6fb3; }
svg.timeline .paused { fill: #e89a2c; }
svg.timeline .cut { fill: #c9453d; }
svg.timeline .crashed { fill: #555; }
svg.timeline .drifted { fill: #8a5ac2; }
svg.timeline .trigger { fill: #222; }
svg.timeline .accepted { fill: #2e9b4f; stroke: #fff; stroke-width: 1; }
svg.timeline .refused { stroke: #c9453d; stroke-width: 2.5; fill: none; }
svg.timeline .lost { stroke: #c9453d; stroke-width: 2; fill: #fff; }
svg.timeline .doubled { fill: #c9453d; stroke: #fff; stroke-width: 1; }
svg.timeline .event { fill: #fff; stroke: #222; stroke-width: 1.2; }
`

// SVG returns the chart as an inline <svg> element, markup ready to put
// in a page as it is: every text and attribute in it is escaped. Each row
// is a <g class="row" data-row="LABEL">, so a page (and a test) can count
// them. It is a plain string, not an html/template type, so that the
// operator's binary, whose page is written without html/template, does
// not link text/template (whose reflection keeps every exported method of
// the program alive: 2.9 MB).
func (c Chart) SVG() string {
	w := c.Width
	if w <= 0 {
		w = 860
	}
	plotW := float64(w - labelW - 36)
	span := c.To - c.From
	if span <= 0 || math.IsNaN(span) {
		span = 1
	}
	x := func(v float64) float64 { return labelW + (v-c.From)/span*plotW }
	titleH := 0
	if c.Title != "" {
		titleH = 16
	}
	h := titleH + top + len(c.Rows)*rowH + axisH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, h, w, h, esc(c.Title))
	if c.Title != "" {
		fmt.Fprintf(&b, `<text class="title" x="0" y="12">%s</text>`, esc(c.Title))
	}
	y0 := float64(titleH + top - 10)
	yEnd := float64(titleH+top+len(c.Rows)*rowH) - 4
	for _, band := range c.Bands {
		fmt.Fprintf(&b, `<rect class="band %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			esc(band.Class), x(band.From), y0, max(x(band.To)-x(band.From), 1), yEnd-y0, esc(band.Title))
	}
	for _, t := range c.Ticks {
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, x(t.At), x(t.At), y0, yEnd)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x(t.At), yEnd+14, esc(t.Label))
	}
	for i, r := range c.Rows {
		y := float64(titleH + top + i*rowH)
		fmt.Fprintf(&b, `<g class="row" data-row="%s">`, esc(r.Label))
		fmt.Fprintf(&b, `<text class="rowlabel" x="0" y="%.1f">%s</text>`, y+barH/2+4, esc(r.Label))
		for _, s := range r.Spans {
			x1, x2 := x(s.From), x(s.To)
			bw := max(x2-x1, 1.5)
			fmt.Fprintf(&b, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%d"><title>%s</title></rect>`,
				esc(s.Class), x1, y, bw, barH, esc(s.Title))
			if s.Label != "" && bw > float64(len(s.Label))*6+12 {
				fmt.Fprintf(&b, `<text class="barlabel" x="%.1f" y="%.1f">%s</text>`, x1+8, y+barH-4, esc(s.Label))
			}
		}
		for _, m := range r.Marks {
			mark(&b, m, x(m.At), y+barH/2)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String() // every text and attribute above is escaped
}

func mark(b *strings.Builder, m Mark, cx, cy float64) {
	const r = 5
	title := fmt.Sprintf("<title>%s</title>", esc(m.Title))
	switch m.Shape {
	case "cross":
		fmt.Fprintf(b, `<g class="mark %s"><path class="%s" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f"/>%s</g>`,
			esc(m.Class), esc(m.Class), cx-r, cy-r, cx+r, cy+r, cx-r, cy+r, cx+r, cy-r, title)
	case "triangle":
		fmt.Fprintf(b, `<path class="mark %s" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ">%s</path>`,
			esc(m.Class), cx-r, cy-r, cx+r, cy-r, cx, cy+r, title)
	case "diamond":
		fmt.Fprintf(b, `<path class="mark %s" d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ">%s</path>`,
			esc(m.Class), cx, cy-r, cx+r, cy, cx, cy+r, cx-r, cy, title)
	default:
		fmt.Fprintf(b, `<circle class="mark %s" cx="%.1f" cy="%.1f" r="%d">%s</circle>`, esc(m.Class), cx, cy, r-1, title)
	}
}

func esc(s string) string { return html.EscapeString(s) }

// Item is one entry of a Legend: a bar of Class when Shape is empty, else
// a mark of that shape.
type Item struct{ Class, Shape, Text string }

// Legend returns a small HTML legend, one swatch per item, markup ready
// to put in a page as it is (every text in it is escaped).
func Legend(items ...Item) string {
	var b strings.Builder
	b.WriteString(`<div class="legend">`)
	for _, it := range items {
		b.WriteString(`<span class="item"><svg class="timeline" width="16" height="16">`)
		if it.Shape == "" {
			fmt.Fprintf(&b, `<rect class="bar %s" x="1" y="3" width="14" height="10"/>`, esc(it.Class))
		} else {
			mark(&b, Mark{Shape: it.Shape, Class: it.Class}, 8, 9)
		}
		fmt.Fprintf(&b, `</svg> %s</span> `, esc(it.Text))
	}
	b.WriteString(`</div>`)
	return b.String()
}
