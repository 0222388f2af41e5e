// Package history records what the nodes of a test cluster believed and
// did, and checks those records independently of the code that made them.
//
// Every node appends Records, one JSON object a line, to a file of its
// own: the intervals in which it believed its term Valid (from its
// election to its deadline, its loss of the term or its death), every
// fenced write it tried (the name, the token, the period, whether the
// fence accepted or refused it, and when the call began and returned) and
// the ledger transitions it made or saw. Times are CLOCK_MONOTONIC
// nanoseconds (Now), which every process and every network namespace of
// one machine shares, so records of different nodes compare directly.
//
// Check verifies, from the records alone:
//   - no two Valid intervals of one name overlap;
//   - a token is held by one holder (node incarnation) only, and each
//     holder's tokens rise;
//   - every due period was accepted exactly once (lost: never; twice:
//     more than once);
//   - every refused write had a stale token: a higher token had been
//     accepted for its name before the refusal returned;
//
// The last property, that the fence is a linearizable register per name
// (package linearize, with porcupine), is checked apart: package history
// is linked into the operator's binary ('baton verify' judges a
// deployment's logs with Verify) and porcupine is not.
//
// What it does not check: that a write it was not told about did not
// happen. A node that dies mid-write records nothing of that write; the
// resource's own rows are the caller's cross-check.
package history

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/monoclock"
)

// Kinds of Record.
const (
	// Elected: Holder won Name with Token at At; its term is valid until
	// Until by its own clock (mapped to CLOCK_MONOTONIC).
	Elected = "elected"
	// Until: Holder's term Token of Name is now valid until Until (a
	// renewal, or its clock changed rate).
	Until = "until"
	// Lost: Holder's term Token of Name ended at At.
	Lost = "lost"
	// Killed: Holder's process was killed at At (recorded by whoever
	// killed it); every term it held ends then.
	Killed = "killed"
	// Write: Holder tried a fenced write for Name with Token (Period
	// empty: raising the fence when it took office) between Call and
	// Return; Accepted says what the fence answered.
	Write = "write"
	// Ledger: the run ledger's row of Period was in State (with Token) at
	// At, as Holder saw or made it.
	Ledger = "ledger"
)

// Record is one line of a node's history.
type Record struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`
	Holder string `json:"holder,omitempty"`
	Token  uint64 `json:"token,omitempty"`
	Period string `json:"period,omitempty"`
	State  string `json:"state,omitempty"`
	// At, Until, Call and Return are CLOCK_MONOTONIC nanoseconds.
	At       int64 `json:"at,omitempty"`
	Until    int64 `json:"until,omitempty"`
	Call     int64 `json:"call,omitempty"`
	Return   int64 `json:"return,omitempty"`
	Accepted bool  `json:"accepted,omitempty"`
}

// Now returns the CLOCK_MONOTONIC time in nanoseconds (the performance
// counter on Windows: package monoclock), which every process of the host
// shares.
func Now() int64 { return monoclock.Now() }

// At maps a time.Time of this process (one with a monotonic reading, such
// as a deadline computed from time.Now) to CLOCK_MONOTONIC nanoseconds.
func At(t time.Time) int64 {
	now, mono := time.Now(), Now()
	return mono + int64(t.Sub(now))
}

// Recorder appends Records to a file, one JSON line each, synced to the
// kernel at every line (a killed process loses nothing it recorded). It is
// safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	f   *os.File
	enc *json.Encoder
}

// Create creates (or appends to) the history file at path.
func Create(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Recorder{f: f, enc: json.NewEncoder(f)}, nil
}

// Add appends r. A nil Recorder records nothing.
func (r *Recorder) Add(rec Record) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enc.Encode(rec) // unbuffered: one write(2) per line
}

// Close closes the file.
func (r *Recorder) Close() error {
	if r == nil {
		return nil
	}
	return r.f.Close()
}

// Read reads the records of every file matching the glob pattern.
func Read(pattern string) ([]Record, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		recs, err := Decode(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", p, err)
		}
		out = append(out, recs...)
	}
	return out, nil
}

// Decode reads JSON-lines records. A torn last line (a process killed
// while writing it) is ignored.
func Decode(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			if !strings.HasSuffix(sc.Text(), "}") {
				continue // torn
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Interval is a stretch of CLOCK_MONOTONIC time in which Holder believed
// its term Token of Name Valid.
type Interval struct {
	Name, Holder string
	Token        uint64
	From, To     int64
}

// Intervals builds the Valid intervals from the records: from each
// election to the term's last known deadline, cut at its loss or its
// holder's death.
func Intervals(recs []Record) []Interval {
	type key struct {
		name, holder string
		token        uint64
	}
	open := map[key]*Interval{}
	var order []key
	killed := map[string]int64{}
	for _, r := range recs {
		if r.Kind == Killed && (killed[r.Holder] == 0 || r.At < killed[r.Holder]) {
			killed[r.Holder] = r.At
		}
	}
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b Record) int { return cmp.Compare(max(a.At, a.Call), max(b.At, b.Call)) })
	ended := map[key]int64{}
	for _, r := range sorted {
		k := key{r.Name, r.Holder, r.Token}
		switch r.Kind {
		case Elected:
			if _, ok := open[k]; !ok {
				open[k] = &Interval{Name: r.Name, Holder: r.Holder, Token: r.Token, From: r.At, To: r.Until}
				order = append(order, k)
			}
		case Until:
			if iv, ok := open[k]; ok && ended[k] == 0 {
				iv.To = r.Until
			}
		case Lost:
			if _, ok := open[k]; ok && (ended[k] == 0 || r.At < ended[k]) {
				ended[k] = r.At
			}
		}
	}
	var out []Interval
	for _, k := range order {
		iv := *open[k]
		if e := ended[k]; e != 0 {
			iv.To = min(iv.To, e)
		}
		if d := killed[k.holder]; d != 0 {
			iv.To = min(iv.To, d)
		}
		if iv.To > iv.From {
			out = append(out, iv)
		}
	}
	return out
}

// Violation is one thing Check found wrong.
type Violation struct {
	// Check names the property: "overlap", "token", "lost", "twice",
	// "refused", "linearizable".
	Check string `json:"check"`
	// Detail says what, in a line.
	Detail string `json:"detail"`
}

// Result is what Check found.
type Result struct {
	Intervals  int         `json:"intervals"`
	Writes     int         `json:"writes"`
	Accepted   int         `json:"accepted"`
	Refused    int         `json:"refused"`
	Periods    int         `json:"periods"`
	Violations []Violation `json:"violations"`
	// Linearizable is porcupine's verdict on the fence per name: "Ok",
	// "Illegal" or "Unknown" (it ran out of time). Check leaves it empty;
	// linearize.Check sets it.
	Linearizable string `json:"linearizable"`
}

// OK reports whether Check found no violation.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// Check checks the records. due lists the periods that came due and must
// each have been accepted exactly once (by a write with their Period). It
// does not check that the fence is linearizable: linearize.Check does.
func Check(recs []Record, due []string) Result {
	var res Result
	add := func(check, format string, a ...any) {
		res.Violations = append(res.Violations, Violation{check, fmt.Sprintf(format, a...)})
	}
	ivs := Intervals(recs)
	res.Intervals = len(ivs)

	res.Violations = append(res.Violations, overlaps(ivs)...)
	res.Violations = append(res.Violations, tokens(filter(recs, func(r Record) bool { return r.Kind == Elected }))...)

	// Every due period accepted exactly once.
	writes := filter(recs, func(r Record) bool { return r.Kind == Write })
	res.Writes = len(writes)
	for _, w := range writes {
		if w.Accepted {
			res.Accepted++
		} else {
			res.Refused++
		}
	}
	res.Periods = len(due)
	accepted := acceptedByPeriod(writes)
	for _, p := range due {
		if v, bad := exactlyOnce(p, accepted[p], true); bad {
			res.Violations = append(res.Violations, v)
		}
	}

	// Every refused write had a stale token.
	for _, w := range writes {
		if w.Accepted {
			continue
		}
		stale := false
		for _, a := range writes {
			if a.Accepted && a.Name == w.Name && a.Token > w.Token && a.Call < w.Return {
				stale = true
				break
			}
		}
		if !stale {
			add("refused", "%s: %s's write with token %d (period %q) was refused, and no higher token had been accepted", w.Name, w.Holder, w.Token, w.Period)
		}
	}

	return res
}

// overlaps returns a violation for every Valid interval that begins
// before another of the same name has ended.
func overlaps(ivs []Interval) []Violation {
	var out []Violation
	add := func(check, format string, a ...any) {
		out = append(out, Violation{check, fmt.Sprintf(format, a...)})
	}
	byName := map[string][]Interval{}
	for _, iv := range ivs {
		byName[iv.Name] = append(byName[iv.Name], iv)
	}
	for _, name := range sortedKeys(byName) {
		list := byName[name]
		slices.SortFunc(list, func(a, b Interval) int { return cmp.Compare(a.From, b.From) })
		var reach Interval // the interval reaching furthest so far
		for i, iv := range list {
			if i > 0 && iv.From < reach.To {
				add("overlap", "%s: %s (token %d) believed it led %.1fms into the term of %s (token %d)",
					name, reach.Holder, reach.Token, float64(reach.To-iv.From)/1e6, iv.Holder, iv.Token)
			}
			if i == 0 || iv.To > reach.To {
				reach = iv
			}
		}
	}

	return out
}

// tokens returns the violations of "a token has one holder, and each
// holder's tokens rise" among the Elected records.
func tokens(elections []Record) []Violation {
	var out []Violation
	add := func(check, format string, a ...any) {
		out = append(out, Violation{check, fmt.Sprintf(format, a...)})
	}
	type nt struct {
		name  string
		token uint64
	}
	holderOf := map[nt]string{}
	lastOf := map[[2]string]uint64{}
	elections = slices.Clone(elections)
	slices.SortStableFunc(elections, func(a, b Record) int { return cmp.Compare(a.At, b.At) })
	for _, r := range elections {
		k := nt{r.Name, r.Token}
		if h, ok := holderOf[k]; ok && h != r.Holder {
			add("token", "%s: token %d was won by %s and by %s", r.Name, r.Token, h, r.Holder)
		}
		holderOf[k] = r.Holder
		hk := [2]string{r.Name, r.Holder}
		if last, ok := lastOf[hk]; ok && r.Token <= last {
			add("token", "%s: %s won token %d after token %d", r.Name, r.Holder, r.Token, last)
		}
		lastOf[hk] = r.Token
	}

	return out
}

// acceptedByPeriod groups the accepted writes that name a period by it.
func acceptedByPeriod(writes []Record) map[string][]Record {
	out := map[string][]Record{}
	for _, w := range writes {
		if w.Accepted && w.Period != "" {
			out[w.Period] = append(out[w.Period], w)
		}
	}
	return out
}

// exactlyOnce judges period p by its accepted writes ws: accepted more
// than once is "twice"; never accepted is "lost" when must is set. It
// returns the violation and whether there is one.
func exactlyOnce(p string, ws []Record, must bool) (Violation, bool) {
	switch {
	case len(ws) == 0 && must:
		return Violation{"lost", fmt.Sprintf("period %s: no write of it was accepted", p)}, true
	case len(ws) > 1:
		var who []string
		for _, w := range ws {
			who = append(who, fmt.Sprintf("%s token %d", w.Holder, w.Token))
		}
		return Violation{"twice", fmt.Sprintf("period %s: accepted %d times (%s)", p, len(ws), strings.Join(who, ", "))}, true
	}
	return Violation{}, false
}

// WriteEvidence writes the result and the records into dir, for a
// post-mortem: violations.txt and records.jsonl (linearize.Evidence adds
// the fence's timelines).
func WriteEvidence(dir string, res Result, recs []Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, v := range res.Violations {
		fmt.Fprintf(&b, "%s: %s\n", v.Check, v.Detail)
	}
	errs := []error{os.WriteFile(filepath.Join(dir, "violations.txt"), []byte(b.String()), 0o644)}
	f, err := os.Create(filepath.Join(dir, "records.jsonl"))
	if err == nil {
		enc := json.NewEncoder(f)
		for _, r := range recs {
			enc.Encode(r)
		}
		errs = append(errs, f.Close())
	} else {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func filter(recs []Record, keep func(Record) bool) []Record {
	var out []Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
