package main

// The status page of 'baton serve', written as Go code rather than with
// html/template. html/template runs on text/template, whose field lookup
// calls reflect's MethodByName; a program that can reach that call keeps
// every exported method of every type it links, and the operator's binary
// grew by 2.9 MB for one page (issue #44's size target). So the page is
// built here by hand, and every value goes through one of three doors:
//
//   - htmlPage.text: HTML-escaped (html.EscapeString escapes <, >, &, '
//     and "), the same for element text and for double-quoted attribute
//     values, which are the only places a value lands;
//   - htmlPage.href: a link, always a relative "?query" built by
//     url.Values (pageQuery), so no value can choose a scheme, then
//     HTML-escaped as an attribute;
//   - htmlPage.raw: markup written in this file, or produced by package
//     timeline, which escapes every text and attribute it draws.
//
// Strings read from a store are escaped for the terminal as well
// (escape.String, control characters shown as \x..) where the page shows
// them to people; data-* attributes keep the raw value for the page's
// script and tests, HTML-escaped.

import (
	"html"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/internal/timeline"
)

// htmlPage is a page being written.
type htmlPage struct{ strings.Builder }

// raw writes markup as it is: literals of this file, or timeline's.
func (p *htmlPage) raw(s ...string) {
	for _, x := range s {
		p.WriteString(x)
	}
}

// text writes a value HTML-escaped.
func (p *htmlPage) text(s string) { p.WriteString(html.EscapeString(s)) }

// num writes an integer.
func (p *htmlPage) num(n int64) { p.WriteString(strconv.FormatInt(n, 10)) }

// unum writes an unsigned integer (a token, a sequence number).
func (p *htmlPage) unum(n uint64) { p.WriteString(strconv.FormatUint(n, 10)) }

// attr writes ` NAME="VALUE"` with the value HTML-escaped.
func (p *htmlPage) attr(name, value string) {
	p.raw(" ", name, `="`)
	p.text(value)
	p.raw(`"`)
}

// href writes ` href="?QUERY"`: q with key set to val (pageQuery).
func (p *htmlPage) href(q inspect.ListQuery, key, val string) {
	p.attr("href", pageQuery(q, key, val))
}

// secs formats seconds as a duration rounded to the millisecond.
func secs(f float64) string {
	return (time.Duration(f * float64(time.Second))).Round(time.Millisecond).String()
}

// stamp formats a store time to the second, "-" when there is none.
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// pageLegend is the legend of the election history charts.
var pageLegend = timeline.Legend(timeline.Item{Class: "held", Text: "held (label: token)"},
	timeline.Item{Class: "band", Text: "nobody held it"},
	timeline.Item{Class: "event", Shape: "diamond", Text: "acquired / taken over / transferred"},
	timeline.Item{Class: "lost", Shape: "circle", Text: "released"},
	timeline.Item{Class: "trigger", Shape: "triangle", Text: "handover requested"})

// renderPage writes the whole page: header, filter form, the "jobs"
// fragment (renderJobs) and the footer.
func renderPage(p *htmlPage, d pageData) {
	p.raw(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>baton · `)
	p.text(d.Store)
	p.raw(`</title>
<link rel="stylesheet" href="/static/style.css">
<style>`, timeline.CSS, `</style>
<noscript><meta http-equiv="refresh" content="5"></noscript>
</head>
<body`)
	p.attr("data-refresh", strconv.FormatInt(d.RefreshMS, 10))
	p.raw(`>
<header>
<h1>baton</h1>
<span class="store">store <code>`)
	p.text(d.Store)
	p.raw(`</code></span>
<span id="live" class="live">refreshing every `)
	p.num(d.RefreshMS)
	p.raw(` ms</span>
</header>
<form id="filter" method="get" action="/">
<input name="prefix" placeholder="name begins with"`)
	p.attr("value", d.Query.Prefix)
	p.raw(` aria-label="name prefix">
<select name="state" aria-label="state"><option value="">any state</option>`)
	for _, s := range d.States {
		p.raw(`<option`)
		if s == d.Query.State {
			p.raw(` selected`)
		}
		p.raw(`>`)
		p.text(s)
		p.raw(`</option>`)
	}
	p.raw(`</select>
<input name="holder" placeholder="holder"`)
	p.attr("value", d.Query.Holder)
	p.raw(` aria-label="holder">
<input name="session" placeholder="session"`)
	p.attr("value", d.Query.Session)
	p.raw(` aria-label="session">
<button type="submit">show</button> <a href="/">all</a>
</form>
<main id="jobs">`)
	renderJobs(p, d)
	p.raw(`</main>
<footer>
`, pageLegend, `
<p>Times are the store's (UTC). In the table, the state and "lease left" are by store time (the store's now against its time of the holder's last renewal): "probably dead" is a flag for people, never a decision. In the detail, "lease left" is the most the holder can have left as seen on this server's own clock since it last saw a renewal. The summary is recounted every few refreshes. Read-only`)
	if d.Admin {
		p.raw(`; actions via the JSON API with the admin token`)
	}
	p.raw(`.</p>
</footer>
<script src="/static/app.js"></script>
</body>
</html>
`)
}

// renderJobs writes the fragment the page's script swaps in on every
// refresh: the stamp, the summary, one page of names and the selected
// name's detail. The script finds the stamp by its exact markup
// (`<div class="stamp" data-now="...">as of ...</div>`).
func renderJobs(p *htmlPage, d pageData) {
	q := d.Query
	p.raw(`<div class="stamp"`)
	p.attr("data-now", d.Now)
	p.raw(`>as of `)
	p.text(d.Now)
	p.raw("</div>\n")
	if d.Err != "" {
		p.raw(`<p class="error">`)
		p.text(d.Err)
		p.raw(`</p>`)
	}
	p.raw("\n", `<section class="summary"`)
	p.attr("data-names", strconv.Itoa(d.Summary.Names))
	p.raw(`>
<span class="total"><b>`)
	p.num(int64(d.Summary.Names))
	p.raw(`</b> names</span>
`)
	for _, s := range d.States {
		p.raw(`<a`)
		p.attr("class", "count "+s)
		p.attr("data-state", s)
		p.attr("href", "?state="+url.QueryEscape(s))
		p.raw(`>`)
		p.text(s)
		p.raw(` <b>`)
		p.num(int64(d.Summary.States[s]))
		p.raw("</b></a>\n")
	}
	p.raw(`<span class="sessions">`)
	p.num(int64(d.Summary.Sessions))
	p.raw(` sessions</span>
`)
	if hs := d.Summary.Holders; len(hs) > 0 {
		p.raw(`<span class="holders">largest holders: `)
		for i, h := range hs[:min(len(hs), 5)] {
			if i > 0 {
				p.raw(", ")
			}
			p.raw(`<a`)
			p.attr("href", "?holder="+url.QueryEscape(h.Holder))
			p.raw(`>`)
			p.text(escape.String(h.Holder))
			p.raw(`</a> `)
			p.num(int64(h.Names))
			if h.State != "" {
				p.raw(" ")
				p.text(h.State)
			}
		}
		p.raw(`</span>`)
	}
	p.raw("\n<small>counted at ")
	p.text(d.SummaryAt)
	p.raw("</small>\n</section>\n")
	switch {
	case len(d.Page.Jobs) > 0:
		renderNames(p, d, q)
	case d.Summary.Names == 0:
		p.raw(`<p class="empty">No names in this store yet.</p>` + "\n")
	default:
		p.raw(`<p class="empty">No name on this page matches.`)
		if d.Page.Next != "" {
			p.raw(` <a class="next"`)
			p.href(q, "cursor", d.Page.Next)
			p.raw(`>read on</a>`)
		}
		p.raw("</p>")
	}
	p.raw("\n")
	if d.Detail != nil {
		renderDetail(p, d.Detail)
	}
}

// renderNames writes the table of one page of names and its pager.
func renderNames(p *htmlPage, d pageData, q inspect.ListQuery) {
	p.raw(`<table class="names">
<thead><tr><th>name</th><th>state</th><th>holder</th><th>token</th><th>session</th><th>lease left</th><th>last renewal</th></tr></thead>
<tbody>`)
	for _, j := range d.Page.Jobs {
		class := j.State.State
		if j.Name == d.Selected {
			class += " selected"
		}
		p.raw(`<tr`)
		p.attr("class", class)
		p.attr("data-name", j.Name)
		p.raw(`><td><a`)
		p.href(q, "name", j.Name)
		p.raw(`>`)
		p.text(escape.String(j.Name))
		p.raw(`</a></td><td class="state">`)
		p.text(j.State.State)
		p.raw(`</td><td>`)
		p.text(escape.String(j.Holder))
		p.raw(`</td><td>`)
		p.unum(j.Token)
		p.raw(`</td><td class="session">`)
		p.text(escape.String(j.Session))
		p.raw(`</td><td>`)
		if l := j.State.LeaseLeftSeconds; l != nil {
			p.raw("at most ")
			p.text(secs(*l))
		} else {
			p.raw("-")
		}
		p.raw(`</td><td>`)
		if j.State.Renewed != nil {
			p.text(secs(j.State.SinceRenewalSeconds))
			p.raw(" ago")
		} else {
			p.raw("-")
		}
		p.raw("</td></tr>\n")
	}
	p.raw(`</tbody></table>
<nav class="pager">`)
	p.num(int64(len(d.Page.Jobs)))
	p.raw(" shown")
	if d.Page.Scanned > len(d.Page.Jobs) {
		p.raw(" of ")
		p.num(int64(d.Page.Scanned))
		p.raw(" read")
	}
	p.raw(". ")
	if d.Query.After != "" {
		p.raw(`<a class="first"`)
		p.href(q, "cursor", "")
		p.raw(`>first page</a> `)
	}
	if d.Page.Next != "" {
		p.raw(`<a class="next"`)
		p.href(q, "cursor", d.Page.Next)
		p.raw(`>next page</a>`)
	}
	p.raw("</nav>\n")
}

// renderDetail writes the selected name's record, schedule, history chart,
// ledger and election log. Every string of c was escaped for the terminal
// by printableDetail.
func renderDetail(p *htmlPage, c *card) {
	p.raw(`<section class="job"`)
	p.attr("data-name", c.Name)
	p.raw(">\n<h2>")
	p.text(c.Name)
	p.raw("</h2>\n")
	if c.Error != "" {
		p.raw(`<p class="error">`)
		p.text(c.Error)
		p.raw(`</p>`)
	}
	p.raw("\n" + `<dl class="record">
<dt>holder</dt><dd class="holder"`)
	p.attr("data-holder", c.Holder)
	p.raw(">")
	if c.Holder != "" {
		p.text(escape.String(c.Holder))
	} else {
		p.raw("<em>free</em>")
	}
	p.raw(`</dd>
<dt>state</dt><dd class="state"`)
	p.attr("data-state", c.State.State)
	p.attr("title", escape.String(c.State.Describe()))
	p.raw(">")
	p.text(c.State.State)
	p.raw(`</dd>
<dt>token</dt><dd class="token">`)
	p.unum(c.Token)
	p.raw(`</dd>
<dt>lease</dt><dd>`)
	p.text(secs(c.LeaseSeconds))
	p.raw(`</dd>
<dt>lease left</dt><dd class="left">`)
	if l := c.LeaseRemainingSeconds; l != nil {
		p.raw("at most ")
		p.text(secs(*l))
	} else {
		p.raw("-")
	}
	p.raw(`</dd>
<dt>written</dt><dd>`)
	p.text(stamp(c.Updated))
	p.raw(`</dd>
<dt>session</dt><dd class="session">`)
	if c.State.Session != "" {
		p.text(escape.String(c.State.Session))
	} else {
		p.raw("-")
	}
	p.raw(`</dd>
<dt>transfer</dt><dd>`)
	switch c.Transfer {
	case "":
		p.raw("none")
	case "*":
		p.raw("resignation requested")
	default:
		p.raw("to ")
		p.text(escape.String(c.Transfer))
	}
	p.raw(`</dd>
<dt>candidates</dt><dd class="candidates">`)
	for i, cand := range c.Candidates {
		if i > 0 {
			p.raw(", ")
		}
		p.raw(`<span`)
		p.attr("title", "waiting since "+cand.Since.Format("15:04:05Z")+", last seen "+secs(cand.AgeSeconds)+" ago")
		p.raw(">")
		p.text(escape.String(cand.Node))
		p.raw("</span>")
		switch {
		case cand.AttrsError != "":
			p.raw(` <span class="attrs damaged"`)
			p.attr("title", "attributes refused: "+cand.AttrsError)
			p.raw(`>(`)
			p.text(cand.Attrs)
			p.raw(`)</span>`)
		case cand.Attrs != "":
			p.raw(` <span class="attrs">(`)
			p.text(cand.Attrs)
			p.raw(`)</span>`)
		}
	}
	if len(c.Candidates) == 0 {
		p.raw("-")
	}
	p.raw("</dd>\n")
	if pr := c.Preference; pr != nil {
		p.raw(`<dt>preference</dt><dd class="preference"`)
		p.attr("data-policy", pr.Policy)
		p.attr("data-leader-preferred", strconv.FormatBool(pr.LeaderPreferred))
		p.raw(`><span class="policy">`)
		p.text(pr.Policy)
		if pr.HysteresisSeconds > 0 {
			p.raw(" (hysteresis ")
			p.text(secs(pr.HysteresisSeconds))
			p.raw(")")
		}
		p.raw(`</span>`)
		if pr.LeaderAttrs != "" {
			p.raw(`; the leader says <span class="attrs">`)
			p.text(pr.LeaderAttrs)
			p.raw(`</span>`)
		}
		p.raw(`<br><span class="why">`)
		p.text(pr.Why)
		p.raw("</span></dd>\n")
	}
	p.raw(`<dt>schedule</dt><dd class="schedule">`)
	if c.Job != nil {
		p.text(escape.String(specText(c.Job.Schedule)))
	} else {
		p.raw("-")
	}
	p.raw(`</dd>
<dt>suspended</dt><dd class="suspended">`)
	switch {
	case c.Job == nil:
		p.raw("-")
	case c.Job.Suspended == nil:
		p.raw("no")
	default:
		s := c.Job.Suspended
		p.raw("since ")
		p.text(s.Since.UTC().Format("2006-01-02 15:04:05Z"))
		p.raw(" by ")
		p.text(escape.String(s.By))
		if s.Reason != "" {
			p.raw(": ")
			p.text(escape.String(s.Reason))
		}
	}
	p.raw(`</dd>
<dt>next due</dt><dd class="next">`)
	if c.Job != nil && c.Job.NextDue != nil {
		p.text(c.Job.NextDue.Scheduled.UTC().Format("2006-01-02 15:04:05Z"))
		if c.Job.NextDue.Overdue {
			p.raw(" (overdue)")
		}
	} else {
		p.raw("-")
	}
	p.raw(`</dd>
</dl>
<h3>Election history</h3>
`)
	if c.Chart != "" {
		p.raw(`<div class="chart">`, c.Chart, `</div>`)
	} else {
		p.raw(`<p class="empty">No election log yet.</p>`)
	}
	p.raw("\n<h3>Run ledger <small>(newest first)</small></h3>\n")
	if len(c.Runs) > 0 {
		p.raw(`<table class="ledger">
<thead><tr><th>period</th><th>state</th><th>attempt</th><th>token</th><th>holder</th><th>manual</th><th>delay</th><th>exit</th></tr></thead>
<tbody>`)
		for _, r := range c.Runs {
			p.raw(`<tr`)
			p.attr("class", r.State)
			p.raw(`><td>`)
			p.text(r.Period)
			p.raw(`</td><td>`)
			p.text(r.State)
			p.raw(`</td><td>`)
			p.num(int64(r.Attempt))
			p.raw(`</td><td>`)
			p.unum(r.Token)
			p.raw(`</td><td>`)
			p.text(escape.String(r.Holder))
			p.raw(`</td><td>`)
			if r.Manual {
				p.raw("yes")
			}
			p.raw(`</td><td>`)
			if r.Started != nil {
				p.text(secs(r.DelaySeconds))
			}
			p.raw(`</td><td>`)
			if r.State == "done" || r.State == "failed" {
				p.num(int64(r.ExitCode))
			}
			p.raw("</td></tr>\n")
		}
		p.raw(`</tbody></table>`)
	} else {
		p.raw(`<p class="empty">No runs: not a scheduled job, or none due yet.</p>`)
	}
	p.raw("\n<details><summary>Election log (")
	p.num(int64(len(c.History)))
	p.raw(` newest events)</summary>
<table class="history"><thead><tr><th>seq</th><th>time</th><th>event</th><th>holder</th><th>token</th></tr></thead>
<tbody>`)
	for _, e := range c.History {
		p.raw(`<tr><td>`)
		p.unum(e.Seq)
		p.raw(`</td><td>`)
		p.text(e.Time.Format("15:04:05.000"))
		p.raw(`</td><td>`)
		p.text(e.Kind)
		if e.Detail != "" {
			p.raw(" (")
			p.text(escape.String(e.Detail))
			p.raw(")")
		}
		p.raw(`</td><td>`)
		p.text(escape.String(e.Holder))
		p.raw(`</td><td>`)
		p.unum(e.Token)
		p.raw("</td></tr>\n")
	}
	p.raw("</tbody></table></details>\n</section>\n")
}
