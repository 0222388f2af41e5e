package drill

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeEvents writes every event, in time order and relative to round 0,
// to NAME.events in the drill's directory, for a post-mortem with --dir.
func (d *procDrill) writeEvents() {
	d.mu.Lock()
	evs := slices.Clone(d.events)
	d.mu.Unlock()
	slices.SortStableFunc(evs, func(a, b procEvent) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%9.3fs  round %5.2f  %s  %s %s\n", e.at.Sub(d.t0).Seconds(), float64(e.at.Sub(d.t0))/float64(d.p.Round),
			d.procs[e.node].id, e.verb, strings.Join(e.args, " "))
	}
	os.WriteFile(filepath.Join(d.dir, d.name+".events"), []byte(b.String()), 0o644)
}

// logTail returns the end of the nodes' stderr logs, for an error message.
func (d *procDrill) logTail() string {
	var b strings.Builder
	for _, pr := range d.procs {
		data, err := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("%s.%s.%d.log", d.name, pr.id, pr.inc)))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "\n%s:\n%s", pr.id, data)
	}
	return b.String()
}

// progressRound reports that round r has begun.
func (d *procDrill) progressRound(r int) {
	w := d.cfg.Progress
	if w == nil || !d.cfg.Live {
		return
	}
	d.mu.Lock()
	leader := d.leaderLocked()
	var tok uint64
	for _, e := range d.events {
		if e.verb == "elected" && e.node == leader {
			tok = max(tok, e.token())
		}
	}
	target := d.target
	d.mu.Unlock()
	rounds := min(r, d.p.Rounds)
	const width = 24
	bar := strings.Repeat("#", rounds*width/d.p.Rounds) + strings.Repeat(".", width-rounds*width/d.p.Rounds)
	state := ""
	if target >= 0 && r >= d.p.Start && r < d.p.Start+d.p.Outage {
		state = fmt.Sprintf("  fault on node-%d", target)
	}
	fmt.Fprintf(w, "\r\033[K%-19s %-15s [%s] round %2d/%d  leader node-%d (token %d)%s",
		d.p.Fault, d.col, bar, rounds, d.p.Rounds, leader, tok, state)
}

func (d *procDrill) progressf(format string, a ...any) {
	if d.cfg.Progress != nil && !d.cfg.Live {
		fmt.Fprintf(d.cfg.Progress, format+"\n", a...)
	}
}

func (d *procDrill) progressDone(r Result) {
	w := d.cfg.Progress
	if w == nil {
		return
	}
	if d.cfg.Live {
		io.WriteString(w, "\r\033[K")
	}
	fmt.Fprintf(w, "drill %s: %s, %s: %d rounds in %.1fs; %d handovers, %d batches started, %d missed, %d pending at the end, %d double-started, %d rejected\n",
		d.mode, d.label, d.col, d.p.Rounds, time.Since(d.began).Seconds(), r.Handovers, r.Started, r.Missed, r.PendingAtEnd, r.DoubleStarts, r.Rejected)
}
