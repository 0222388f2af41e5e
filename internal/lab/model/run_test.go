package model

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

func TestRunLessonColumns(t *testing.T) {
	// The lesson's measure table: plain, fencing, fencing+trigger.
	tests := []struct {
		name             string
		fencing, trigger bool
		want             Result
	}{
		{"plain", false, false, Result{Started: 3, Missed: 1, DoubleStarts: 1, TwoLeaderRounds: 2, LeaderlessRounds: 2, HandoverRounds: 3, Handovers: 1}},
		{"fencing", true, false, Result{Started: 3, Missed: 1, Rejected: 2, TwoLeaderRounds: 2, LeaderlessRounds: 2, HandoverRounds: 3, Handovers: 1}},
		{"fencing+trigger", true, true, Result{Started: 4, Rejected: 2, DelayedRounds: 2, TwoLeaderRounds: 2, LeaderlessRounds: 2, HandoverRounds: 3, Handovers: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			p.Fencing, p.PersistentTrigger = tt.fencing, tt.trigger
			if got := Run(p); got != tt.want {
				t.Errorf("Run = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDefaultParamsValid(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatalf("DefaultParams().Validate() = %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Params)
		field string
	}{
		{"one node", func(p *Params) { p.Nodes = 1 }, "nodes"},
		{"too many nodes", func(p *Params) { p.Nodes = MaxNodes + 1 }, "nodes"},
		{"zero lease", func(p *Params) { p.Lease = 0 }, "lease"},
		{"zero renewal", func(p *Params) { p.Renewal = 0 }, "renewal"},
		{"negative outage", func(p *Params) { p.Outage = -1 }, "outage"},
		{"zero start", func(p *Params) { p.Start = 0 }, "start"},
		{"zero rounds", func(p *Params) { p.Rounds = 0 }, "rounds"},
		{"too many rounds", func(p *Params) { p.Rounds = MaxRounds + 1 }, "rounds"},
		{"zero trigger", func(p *Params) { p.Triggers = []int{6, 0} }, "triggers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.edit(&p)
			err := p.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate() = %v, want a FieldError for %s", err, tt.field)
			}
			if !errors.Is(err, ErrInvalidParams) {
				t.Errorf("errors.Is(%v, ErrInvalidParams) = false", err)
			}
		})
	}
	t.Run("edge values pass", func(t *testing.T) {
		p := Params{Nodes: 2, Lease: 1, Renewal: 1, Outage: 0, Start: 1, Rounds: 1}
		if err := p.Validate(); err != nil {
			t.Errorf("Validate() = %v", err)
		}
	})
}

type runVector struct {
	Valid  bool   `json:"valid"`
	Params Params `json:"params"`
	Want   Result `json:"want"`
}

type vectorFile struct {
	Runs    []runVector `json:"runs"`
	ToFixed []struct {
		X      float64 `json:"x"`
		Digits int     `json:"digits"`
		Want   string  `json:"want"`
	} `json:"toFixed"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	data, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Runs) < 3000 {
		t.Fatalf("testdata/vectors.json has %d runs; regenerate it (see internal/lab/model/testdata/gen)", len(vf.Runs))
	}
	return vf
}

// TestRunMatchesLessonModel compares Run with the results of the lesson's own
// model, recorded by internal/lab/model/testdata/gen.
func TestRunMatchesLessonModel(t *testing.T) {
	vf := loadVectors(t)
	failed := 0
	for i, v := range vf.Runs {
		if got := Run(v.Params); got != v.Want {
			t.Errorf("vector %d: Run(%+v)\n got %+v\nwant %+v", i, v.Params, got, v.Want)
			if failed++; failed == 10 {
				t.Fatal("too many failures")
			}
		}
		if err := v.Params.Validate(); (err == nil) != v.Valid {
			t.Errorf("vector %d: Validate(%+v) = %v, but the vector is marked valid=%v", i, v.Params, err, v.Valid)
		}
	}
}

func TestToFixedMatchesLesson(t *testing.T) {
	vf := loadVectors(t)
	if len(vf.ToFixed) == 0 {
		t.Fatal("no toFixed vectors")
	}
	for _, c := range vf.ToFixed {
		if got := toFixed(c.X, c.Digits); got != c.Want {
			t.Errorf("toFixed(%v, %d) = %q, want %q", c.X, c.Digits, got, c.Want)
		}
	}
}

func TestRunDoesNotPanicOnInvalidParams(t *testing.T) {
	for _, p := range []Params{
		{Nodes: -3, Lease: 3, Renewal: 3, Outage: 5, Start: 6, Rounds: 24},
		{Nodes: 0, Lease: 0, Renewal: 0, Outage: -5, Start: -5, Rounds: 10, Triggers: []int{-1, 0, 3}},
		{Nodes: 3, Lease: 3, Renewal: 3, Outage: int(^uint(0) >> 1), Start: int(^uint(0) >> 1), Rounds: 10},
		{Nodes: 3, Lease: 3, Renewal: 3, Outage: -int(^uint(0) >> 1), Start: -int(^uint(0)>>1) - 1, Rounds: 10},
	} {
		_ = Run(p)
	}
}
