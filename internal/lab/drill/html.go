package drill

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/batonhq/baton/internal/lab/vcluster"
	"github.com/batonhq/baton/internal/timeline"
)

// Event is one entry of a column's timeline: what a node did or suffered
// in the virtual-clock drill, and when.
type Event struct {
	// Seconds is the virtual time since the start of the drill.
	Seconds float64 `json:"seconds"`
	// Node is the node's index (node-0 suffers the fault).
	Node int `json:"node"`
	// Kind is one of elected, lost, fault, claimed, froze-before, wrote,
	// refused.
	Kind string `json:"kind"`
	// Token is the term's token (elected, lost, claimed, wrote, refused).
	Token uint64 `json:"token,omitempty"`
	// Period is the batch's period key (claimed, froze-before, wrote,
	// refused).
	Period string `json:"period,omitempty"`
	// Fault names the fault event (fault): cut, reconnect, freeze, thaw,
	// arm-freeze-before-write, disarm, crash, restart, set-rate.
	Fault string `json:"fault,omitempty"`
	// Cause says why a term ended (lost) or which write a fence refused
	// (refused).
	Cause string `json:"cause,omitempty"`
}

func timelineOf(hs []vcluster.Happening) []Event {
	if len(hs) == 0 {
		return nil
	}
	out := make([]Event, len(hs))
	for i, h := range hs {
		out[i] = Event{Seconds: h.At.Seconds(), Node: h.Node, Kind: string(h.Kind), Token: h.Token,
			Period: h.Period, Fault: h.Fault, Cause: h.Cause}
	}
	return out
}

// faultClass maps a fault's beginning to the class of the stretch it
// starts, and names the event that ends it.
var faultClass = map[string]struct{ class, end, what string }{
	"cut":                     {"cut", "reconnect", "cut off from the store"},
	"freeze":                  {"paused", "thaw", "paused (SIGSTOP)"},
	"arm-freeze-before-write": {"paused", "disarm", "paused between Valid() and the write"},
	"crash":                   {"crashed", "restart", "crashed"},
	"set-rate":                {"drifted", "set-rate", "clock running fast"},
}

// Chart draws column c of the report as a timeline in rounds: a row for
// the batches (a triangle at each trigger) and a row per node with the
// stretches it led (labelled with the token), was paused, cut off, crashed
// or drifting, a dot for each write the resource accepted and a cross for
// each one a fence refused; the handover gap (from the fault to the next
// election) is shaded.
func (r Report) Chart(c Column) timeline.Chart {
	p, res := r.Params, r.Columns[c]
	round := p.Round.Seconds()
	at := func(sec float64) float64 { return sec / round }
	ch := timeline.Chart{Title: string(c), From: 0, To: float64(p.Rounds + 1)}
	for i := 0; i <= p.Rounds+1; i += max(1, (p.Rounds+1)/12) {
		ch.Ticks = append(ch.Ticks, timeline.Tick{At: float64(i), Label: fmt.Sprintf("r%d", i)})
	}
	batches := timeline.Row{Label: "batch due"}
	for _, t := range p.Triggers {
		batches.Marks = append(batches.Marks, timeline.Mark{At: float64(t), Shape: "triangle", Class: "trigger",
			Title: fmt.Sprintf("batch due at round %d", t)})
	}
	ch.Rows = append(ch.Rows, batches)
	nodes := make([]timeline.Row, p.Nodes)
	for i := range nodes {
		nodes[i].Label = fmt.Sprintf("node-%d", i)
	}
	end := at(float64(p.Rounds+1) * round)
	type open struct {
		from  float64
		token uint64
		what  string
		class string
		end   string
	}
	led := map[int]*open{}
	faulted := map[int]*open{}
	faultSpans := make([][]timeline.Span, p.Nodes)
	written := map[string]bool{} // periods whose batch landed
	for _, e := range r.Timelines[c] {
		if e.Node < 0 || e.Node >= p.Nodes {
			continue
		}
		row := &nodes[e.Node]
		x := at(e.Seconds)
		switch e.Kind {
		case "elected":
			led[e.Node] = &open{from: x, token: e.Token}
		case "lost":
			if o := led[e.Node]; o != nil {
				row.Spans = append(row.Spans, timeline.Span{From: o.from, To: x, Class: "led", Label: fmt.Sprintf("token %d", o.token),
					Title: fmt.Sprintf("node-%d led with token %d, rounds %.2f to %.2f; ended: %s", e.Node, o.token, o.from, x, e.Cause)})
				delete(led, e.Node)
			}
		case "fault":
			if o := faulted[e.Node]; o != nil && e.Fault == o.end {
				faultSpans[e.Node] = append(faultSpans[e.Node], timeline.Span{From: o.from, To: x, Class: o.class,
					Title: fmt.Sprintf("node-%d %s, rounds %.2f to %.2f", e.Node, o.what, o.from, x)})
				delete(faulted, e.Node)
				continue
			}
			if f, ok := faultClass[e.Fault]; ok && e.Fault != "arm-freeze-before-write" {
				faulted[e.Node] = &open{from: x, class: f.class, what: f.what, end: f.end}
			}
		case "froze-before":
			f := faultClass["arm-freeze-before-write"]
			faulted[e.Node] = &open{from: x, class: f.class, what: f.what + " of " + e.Period, end: f.end}
		case "wrote":
			m := timeline.Mark{At: x, Shape: "circle", Class: "accepted",
				Title: fmt.Sprintf("node-%d wrote the batch %s with token %d at round %.2f: accepted", e.Node, e.Period, e.Token, x)}
			if written[e.Period] {
				m.Class, m.Title = "doubled", m.Title+", a second time: duplicate invoice lines"
			}
			written[e.Period] = true
			row.Marks = append(row.Marks, m)
		case "refused":
			row.Marks = append(row.Marks, timeline.Mark{At: x, Shape: "cross", Class: "refused",
				Title: fmt.Sprintf("node-%d %s with token %d at round %.2f: refused by the fence (stale token)", e.Node, e.Cause, e.Token, x)})
		}
	}
	for i, o := range led {
		nodes[i].Spans = append(nodes[i].Spans, timeline.Span{From: o.from, To: end, Class: "led", Label: fmt.Sprintf("token %d", o.token),
			Title: fmt.Sprintf("node-%d led with token %d from round %.2f to the end", i, o.token, o.from)})
	}
	for i, o := range faulted {
		faultSpans[i] = append(faultSpans[i], timeline.Span{From: o.from, To: end, Class: o.class,
			Title: fmt.Sprintf("node-%d %s from round %.2f to the end", i, o.what, o.from)})
	}
	for i := range nodes {
		nodes[i].Spans = append(nodes[i].Spans, faultSpans[i]...) // drawn over the led bars
	}
	ch.Rows = append(ch.Rows, nodes...)
	if res.HandoverRounds > 0 || res.HandoverSeconds > 0 {
		from := float64(p.Start)
		ch.Bands = append(ch.Bands, timeline.Span{From: from, To: from + at(res.HandoverSeconds),
			Title: fmt.Sprintf("handover gap: %.3fs (%d rounds) from the fault to the next election", res.HandoverSeconds, res.HandoverRounds)})
	}
	return ch
}

// measure is one row of the HTML table: its JSON name (as in Result), its
// label, and how to read it.
type measure struct {
	key, label string
	real       func(Result) string
	model      func(r Report, c Column) string
}

func measures() []measure {
	i := func(f func(Result) int) func(Result) string { return func(x Result) string { return fmt.Sprint(f(x)) } }
	s := func(f func(Result) float64) func(Result) string {
		return func(x Result) string { return fmt.Sprintf("%.3f", f(x)) }
	}
	var ms []measure
	for _, row := range tableRows() {
		ms = append(ms, measure{key: row.key, label: row.label, real: i(row.real),
			model: func(r Report, c Column) string { return fmt.Sprint(row.model(r.Model[c])) }})
	}
	ms = append(ms,
		measure{key: "handoverSeconds", label: "handover seconds", real: s(func(x Result) float64 { return x.HandoverSeconds })},
		measure{key: "leaderlessSeconds", label: "leaderless seconds", real: s(func(x Result) float64 { return x.LeaderlessSeconds })},
		measure{key: "twoLeaderSeconds", label: "two running leaders seconds", real: s(func(x Result) float64 { return x.TwoLeaderSeconds })},
		measure{key: "duplicateLines", label: "duplicate invoice lines", real: i(func(x Result) int { return x.DuplicateLines })},
		measure{key: "missingLines", label: "missing invoice lines", real: i(func(x Result) int { return x.MissingLines })},
	)
	return ms
}

type htmlCell struct {
	Col, Key, Value, Model string
}

type htmlRow struct {
	Label string
	Cells []htmlCell
}

type htmlFault struct {
	Fault    string
	About    string
	Verdicts []string
	Columns  []string
	Rows     []htmlRow
	Charts   []htmlChart
}

type htmlChart struct {
	Col string
	SVG template.HTML
}

// WriteHTML writes the reports as one self-contained HTML page (inline CSS
// and SVG, no script, nothing loaded from elsewhere): per fault, the
// verdicts, the table (the same numbers as the text and JSON output) and
// one timeline per column.
func WriteHTML(w io.Writer, reports []Report) error {
	data := struct {
		Legend      template.HTML
		ColumnsText string
		Faults      []htmlFault
		CSS         template.CSS
	}{
		Legend: template.HTML(timeline.Legend(
			timeline.Item{Class: "led", Text: "leads (label: token)"},
			timeline.Item{Class: "paused", Text: "paused"},
			timeline.Item{Class: "cut", Text: "cut off from the store"},
			timeline.Item{Class: "crashed", Text: "crashed"},
			timeline.Item{Class: "drifted", Text: "clock fast"},
			timeline.Item{Class: "band", Text: "handover gap"},
			timeline.Item{Class: "trigger", Shape: "triangle", Text: "batch due"},
			timeline.Item{Class: "accepted", Shape: "circle", Text: "write accepted"},
			timeline.Item{Class: "doubled", Shape: "circle", Text: "write accepted again (duplicate)"},
			timeline.Item{Class: "refused", Shape: "cross", Text: "write refused by the fence"})),
		ColumnsText: Legend,
		CSS:         template.CSS(timeline.CSS + reportCSS),
	}
	for _, r := range reports {
		about, _, _ := strings.Cut(r.Table(), "\n")
		hf := htmlFault{Fault: string(r.Fault), About: about}
		for _, v := range strings.Split(strings.TrimRight(r.Verdicts(), "\n"), "\n") {
			hf.Verdicts = append(hf.Verdicts, strings.TrimSpace(v))
		}
		for _, c := range Columns {
			hf.Columns = append(hf.Columns, string(c))
			hf.Charts = append(hf.Charts, htmlChart{Col: string(c), SVG: template.HTML(r.Chart(c).SVG())})
		}
		for _, m := range measures() {
			row := htmlRow{Label: m.label}
			for _, c := range Columns {
				cell := htmlCell{Col: string(c), Key: m.key, Value: m.real(r.Columns[c])}
				if m.model != nil {
					cell.Model = m.model(r, c)
				}
				row.Cells = append(row.Cells, cell)
			}
			hf.Rows = append(hf.Rows, row)
		}
		data.Faults = append(data.Faults, hf)
	}
	return reportTemplate.Execute(w, data)
}

const reportCSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.2em 2em; color: #222; max-width: 1500px; }
h1 { font-size: 22px; margin: 0 0 0.3em; }
h2 { font-size: 17px; margin: 1.6em 0 0.2em; border-top: 1px solid #ddd; padding-top: 0.8em; }
.about { color: #444; margin: 0.2em 0 0.6em; }
pre.legend-text { background: #f6f6f6; padding: 0.6em 0.8em; font-size: 12px; white-space: pre-wrap; }
ul.verdicts { margin: 0.3em 0 0.8em; padding-left: 1.2em; }
ul.verdicts li { white-space: pre; font-family: ui-monospace, monospace; font-size: 12.5px; }
.fault-body { display: flex; gap: 1.5em; align-items: flex-start; flex-wrap: wrap; }
table.measures { border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
table.measures th, table.measures td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: right; }
table.measures th:first-child, table.measures td:first-child { text-align: left; }
table.measures .model { color: #888; }
figure.column { margin: 0 0 0.6em; }
.legend { font-size: 12px; color: #444; margin: 0.4em 0; }
.legend .item { margin-right: 1em; white-space: nowrap; }
.legend svg { vertical-align: middle; }
`

var reportTemplate = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>baton drill</title>
<style>{{.CSS}}</style>
</head>
<body>
<h1>baton drill: the lesson's failover, drawn</h1>
<pre class="legend-text">{{.ColumnsText}}</pre>
{{.Legend}}
{{range .Faults}}<section class="fault" data-fault="{{.Fault}}">
<h2>fault: {{.Fault}}</h2>
<p class="about">{{.About}}</p>
<ul class="verdicts">{{range .Verdicts}}<li>{{.}}</li>{{end}}</ul>
<div class="fault-body">
<table class="measures">
<thead><tr><th>measure (lesson's model)</th>{{range .Columns}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Cells}}<td data-col="{{.Col}}" data-measure="{{.Key}}" data-value="{{.Value}}">{{.Value}}{{if .Model}} <span class="model">({{.Model}})</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<div class="charts">{{range .Charts}}<figure class="column" data-col="{{.Col}}">{{.SVG}}</figure>
{{end}}</div>
</div>
</section>
{{end}}
</body>
</html>
`))
