package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/batonhq/baton/internal/browsertest"
	"github.com/batonhq/baton/internal/lab/drill"
)

// 'baton drill --html' opens in headless Chromium with one timeline per
// column and fault, each with a row per node and one for the batches, and
// the numbers in its tables are the ones 'baton drill --json' prints.
// Its batches are of 200 invoice lines, as in internal/lab/drill's tests (the
// same report at a fraction of the SQLite work: the lesson's 4,000 took
// 35 s of the package's time under load), unless the screenshots are
// kept ($BATON_SCREENSHOTS): the README's image is of the lesson's drill.
func TestDrillHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every drill and starts a browser")
	}
	t.Parallel() // its own report file and browser
	file := filepath.Join(t.TempDir(), "report.html")
	args := []string{"drill", "--json", "--html", file}
	if os.Getenv(browsertest.ScreenshotDirVar) == "" {
		args = append(args, "--invoice-lines", "200")
	}
	code, out, stderr := runBaton(t, args...)
	if code != 0 {
		t.Fatalf("drill exited %d: %s", code, stderr)
	}
	var reports []drill.Report
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t, 90*time.Second) // after the drill, which is slow under -race
	for _, ext := range []string{"<script", "src=", "href=", "@import", "url("} {
		if strings.Contains(string(page), ext) {
			t.Errorf("the report is not self-contained: it contains %q", ext)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(`section.fault`)); err != nil {
		t.Fatal(err)
	}
	charts := eval[int](t, ctx, `document.querySelectorAll('section.fault figure.column svg.timeline').length`)
	if want := len(drill.Faults) * len(drill.Columns); charts != want || len(reports) != len(drill.Faults) {
		t.Fatalf("%d timelines for %d reports, want %d (one per column and fault)", charts, len(reports), want)
	}
	// Rows per timeline, and the numbers of every cell, read in the browser.
	type cell struct{ Fault, Col, Measure, Value string }
	cells := eval[[]cell](t, ctx, `[...document.querySelectorAll('section.fault td[data-measure]')].map(td => ({
		Fault: td.closest('section.fault').dataset.fault, Col: td.dataset.col, Measure: td.dataset.measure, Value: td.dataset.value}))`)
	rows := eval[[]int](t, ctx, `[...document.querySelectorAll('figure.column svg.timeline')].map(s => s.querySelectorAll('g.row').length)`)
	for i, n := range rows {
		if n != drill.DefaultParams().Nodes+1 {
			t.Errorf("timeline %d has %d rows, want %d (a row per node and one for the batches)", i, n, drill.DefaultParams().Nodes+1)
		}
	}
	want := map[cell]bool{}
	for _, r := range reports {
		for col, res := range r.Columns {
			v := reflect.ValueOf(res)
			for i := range v.NumField() {
				key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
				s := fmt.Sprint(v.Field(i).Interface())
				if f, ok := v.Field(i).Interface().(float64); ok {
					s = fmt.Sprintf("%.3f", f)
				}
				want[cell{string(r.Fault), string(col), key, s}] = true
			}
		}
	}
	if len(cells) != len(drill.Faults)*len(drill.Columns)*13 {
		t.Errorf("%d table cells, want %d", len(cells), len(drill.Faults)*len(drill.Columns)*13)
	}
	for _, c := range cells {
		if !want[c] {
			t.Errorf("the report shows %s %s %s = %s; the JSON drill says otherwise", c.Fault, c.Col, c.Measure, c.Value)
		}
	}
	// Marks: a refused write drawn for every write a fence refused.
	refused := eval[int](t, ctx, `document.querySelectorAll('figure.column svg.timeline .mark.refused').length`)
	total := 0
	for _, r := range reports {
		for _, res := range r.Columns {
			total += res.Rejected
		}
	}
	if refused != total {
		t.Errorf("%d refused writes drawn, the JSON counts %d", refused, total)
	}
	// The README's image of the drill: the pause-before-effect section, on
	// a page wide enough for the table and the timelines side by side.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1500, 1000)); err != nil {
		t.Fatal(err)
	}
	shot := browsertest.ScreenshotElement(t, ctx, `section.fault[data-fault="pause-before-effect"]`, "drill.png")
	if img, err := png.Decode(bytes.NewReader(shot)); err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("screenshot of the drill: %v", err)
	}
}
