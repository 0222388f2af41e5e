package model

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestQuorum(t *testing.T) {
	for _, tt := range []struct{ members, want int }{{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4}} {
		got, err := Quorum(tt.members)
		if err != nil || got != tt.want {
			t.Errorf("Quorum(%d) = %d, %v; want %d", tt.members, got, err, tt.want)
		}
	}
	if _, err := Quorum(0); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("Quorum(0) error = %v, want ErrInvalidParams", err)
	}
}

func TestElect(t *testing.T) {
	tests := []struct {
		name    string
		b       Ballot
		elected bool
		field   string // non-empty: want a FieldError for it
	}{
		{"glossary example", Ballot{Members: 5, Votes: 4, Term: 13, LastTerm: 12}, true, ""},
		{"exact quorum", Ballot{Members: 5, Votes: 3, Term: 13, LastTerm: 12}, true, ""},
		{"minority side", Ballot{Members: 5, Votes: 2, Term: 13, LastTerm: 12}, false, ""},
		{"stale term", Ballot{Members: 5, Votes: 5, Term: 12, LastTerm: 12}, false, ""},
		{"older term", Ballot{Members: 5, Votes: 5, Term: 11, LastTerm: 12}, false, ""},
		{"no members", Ballot{Members: 0}, false, "members"},
		{"votes above members", Ballot{Members: 5, Votes: 6, Term: 1}, false, "votes"},
		{"negative votes", Ballot{Members: 5, Votes: -1, Term: 1}, false, "votes"},
		{"negative term", Ballot{Members: 5, Votes: 3, Term: -1}, false, "term"},
		{"negative last term", Ballot{Members: 5, Votes: 3, Term: 1, LastTerm: -1}, false, "last-term"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Elect(tt.b)
			if tt.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tt.field {
					t.Fatalf("Elect(%+v) error = %v, want a FieldError for %s", tt.b, err, tt.field)
				}
				return
			}
			if err != nil || v.Elected != tt.elected || v.Reason == "" {
				t.Fatalf("Elect(%+v) = %+v, %v; want elected=%v with a reason", tt.b, v, err, tt.elected)
			}
		})
	}
}

func TestActivation(t *testing.T) {
	tests := []struct {
		name               string
		lease, eps, ready  time.Duration
		wantSafe, wantWait time.Duration
		wantErr            bool
	}{
		{"glossary example", 8 * time.Second, 150 * time.Millisecond, 3700 * time.Millisecond, 8300 * time.Millisecond, 4600 * time.Millisecond, false},
		{"ready at safe", 8 * time.Second, 150 * time.Millisecond, 8300 * time.Millisecond, 8300 * time.Millisecond, 0, false},
		{"ready past safe", 8 * time.Second, 150 * time.Millisecond, 9 * time.Second, 8300 * time.Millisecond, 0, false},
		{"all zero", 0, 0, 0, 0, 0, false},
		{"negative lease", -time.Second, 0, 0, 0, 0, true},
		{"negative epsilon", time.Second, -1, 0, 0, 0, true},
		{"negative ready", time.Second, 0, -1, 0, 0, true},
		{"overflow", time.Duration(math.MaxInt64 - 10), 10, 0, 0, 0, true},
		{"largest that fits", time.Duration(math.MaxInt64 - 10), 5, 0, time.Duration(math.MaxInt64), time.Duration(math.MaxInt64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			safe, wait, err := Activation(tt.lease, tt.eps, tt.ready)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidParams) {
					t.Fatalf("Activation error = %v, want ErrInvalidParams", err)
				}
				return
			}
			if err != nil || safe != tt.wantSafe || wait != tt.wantWait {
				t.Fatalf("Activation = %v, %v, %v; want %v, %v", safe, wait, err, tt.wantSafe, tt.wantWait)
			}
		})
	}
}
