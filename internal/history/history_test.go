package history

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const ms = int64(1e6)

// clean is a history with one handover: node-a leads with token 1 and
// writes period P1, is cut off, node-b takes over with token 2 after a's
// deadline, raises the fence, writes P2; a's late write of P2 is refused.
func clean() []Record {
	return []Record{
		{Kind: Elected, Name: "job", Holder: "a#1", Token: 1, At: 0, Until: 300 * ms},
		{Kind: Until, Name: "job", Holder: "a#1", Token: 1, At: 100 * ms, Until: 400 * ms},
		{Kind: Write, Name: "job", Holder: "a#1", Token: 1, Call: 10 * ms, Return: 11 * ms, At: 11 * ms, Accepted: true},
		{Kind: Write, Name: "job", Holder: "a#1", Token: 1, Period: "P1", Call: 20 * ms, Return: 25 * ms, At: 25 * ms, Accepted: true},
		{Kind: Lost, Name: "job", Holder: "a#1", Token: 1, At: 400 * ms},
		{Kind: Elected, Name: "job", Holder: "b#1", Token: 2, At: 460 * ms, Until: 760 * ms},
		{Kind: Write, Name: "job", Holder: "b#1", Token: 2, Call: 470 * ms, Return: 471 * ms, At: 471 * ms, Accepted: true},
		{Kind: Write, Name: "job", Holder: "b#1", Token: 2, Period: "P2", Call: 480 * ms, Return: 490 * ms, At: 490 * ms, Accepted: true},
		{Kind: Write, Name: "job", Holder: "a#1", Token: 1, Period: "P2", Call: 500 * ms, Return: 505 * ms, At: 505 * ms},
	}
}

func checks(res Result) []string {
	var out []string
	for _, v := range res.Violations {
		out = append(out, v.Check)
	}
	return out
}

func TestCheckClean(t *testing.T) {
	res := Check(clean(), []string{"P1", "P2"})
	if !res.OK() || res.Linearizable != "" {
		t.Fatalf("a clean history has violations: %+v", res.Violations)
	}
	if res.Intervals != 2 || res.Writes != 5 || res.Accepted != 4 || res.Refused != 1 || res.Periods != 2 {
		t.Fatalf("counts %+v", res)
	}
}

// Each property fails on a history that breaks it, and names it.
func TestCheckViolations(t *testing.T) {
	tests := []struct {
		name string
		edit func([]Record) []Record
		due  []string
		want string
	}{
		{"overlap", func(h []Record) []Record {
			h[5].At = 350 * ms // b elected while a still believed it led
			return h
		}, []string{"P1", "P2"}, "overlap"},
		{"killed ends the term", func(h []Record) []Record {
			h = slices.Delete(h, 4, 5) // no lost record: a was killed
			h = append(h, Record{Kind: Killed, Holder: "a#1", At: 200 * ms})
			h[5-1].At = 350 * ms
			return h
		}, []string{"P1", "P2"}, ""},
		{"token twice", func(h []Record) []Record {
			h[5].Token, h[6].Token, h[7].Token = 1, 1, 1
			return h
		}, nil, "token"},
		{"lost", func(h []Record) []Record { return h }, []string{"P1", "P2", "P3"}, "lost"},
		{"twice", func(h []Record) []Record {
			h[8].Accepted = true // the stale write landed: no fence
			return h
		}, []string{"P1", "P2"}, "twice"},
		{"refused fresh", func(h []Record) []Record {
			h[2].Accepted = false // refused with nothing higher accepted
			return h
		}, nil, "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.edit(clean()), tc.due)
			got := checks(res)
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("violations %v: %+v", got, res.Violations)
				}
				return
			}
			if !slices.Contains(got, tc.want) {
				t.Fatalf("want a %q violation, got %+v", tc.want, res.Violations)
			}
		})
	}
}

func TestRecordReadEvidence(t *testing.T) {
	dir := t.TempDir()
	r, err := Create(filepath.Join(dir, "a.history"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range clean() {
		r.Add(rec)
	}
	r.Close()
	// A torn last line, as a killed process leaves it.
	f, _ := os.OpenFile(filepath.Join(dir, "a.history"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"wri`)
	f.Close()
	recs, err := Read(filepath.Join(dir, "*.history"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs, clean()) {
		t.Fatalf("read back %d records, want %d", len(recs), len(clean()))
	}
	bad := clean()
	bad[8].Accepted = true
	res := Check(bad, []string{"P1", "P2"})
	if err := WriteEvidence(filepath.Join(dir, "evidence"), res, bad); err != nil {
		t.Fatal(err)
	}
	v, _ := os.ReadFile(filepath.Join(dir, "evidence", "violations.txt"))
	if !strings.Contains(string(v), "twice: period P2") {
		t.Fatalf("violations.txt:\n%s", v)
	}
	if _, err := os.Stat(filepath.Join(dir, "evidence", "records.jsonl")); err != nil {
		t.Fatalf("no records.jsonl: %v", err)
	}
	if a, b := Now(), Now(); b < a || a <= 0 {
		t.Fatalf("CLOCK_MONOTONIC went back: %d then %d", a, b)
	}
}
