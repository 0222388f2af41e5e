package main

import (
	"strings"
	"testing"
)

func TestCalcQuorum(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		code  int
		wants []string
	}{
		{"glossary example", []string{"--members", "5", "--votes", "4", "--term", "13", "--last-term", "12"}, exitOK,
			[]string{"quorum   3", "verdict  elected"}},
		{"minority side", []string{"--members", "5", "--votes", "2", "--term", "13", "--last-term", "12"}, exitFailure,
			[]string{"quorum   3", "verdict  not elected", "below the majority quorum of 3"}},
		{"stale term", []string{"--members", "5", "--votes", "5", "--term", "12", "--last-term", "12"}, exitFailure,
			[]string{"not elected", "not greater"}},
		{"quorum only", []string{"--members", "4"}, exitOK, []string{"quorum   3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runBaton(t, append([]string{"calc", "quorum"}, tt.args...)...)
			if code != tt.code || stderr != "" {
				t.Fatalf("exit %d (want %d), stderr %q", code, tt.code, stderr)
			}
			for _, w := range tt.wants {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCalcActivation(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		safe, wait string
	}{
		{"glossary example", []string{"--lease", "8s", "--epsilon", "150ms", "--ready", "3.7s"}, "8.3s", "4.6s"},
		{"ready after safe", []string{"--lease", "8s", "--epsilon", "150ms", "--ready", "10s"}, "8.3s", "0s"},
		{"ready exactly safe", []string{"--lease", "8s", "--epsilon", "150ms", "--ready", "8.3s"}, "8.3s", "0s"},
		{"ready defaults to 0s", []string{"--lease", "1s", "--epsilon", "1ms"}, "1.002s", "1.002s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runBaton(t, append([]string{"calc", "activation"}, tt.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			lines := strings.Split(out, "\n")
			if len(lines) < 2 {
				t.Fatalf("output %q", out)
			}
			if f := strings.Fields(lines[0]); len(f) < 2 || f[0] != "T_safe" || f[1] != tt.safe {
				t.Errorf("first line %q, want T_safe %s", lines[0], tt.safe)
			}
			if f := strings.Fields(lines[1]); len(f) < 2 || f[0] != "wait" || f[1] != tt.wait {
				t.Errorf("second line %q, want wait %s", lines[1], tt.wait)
			}
		})
	}
}

func TestCalcUsageErrors(t *testing.T) {
	tests := []struct {
		args  []string
		wants []string
	}{
		{[]string{"calc"}, []string{"missing subcommand"}},
		{[]string{"calc", "votes"}, []string{`"votes"`}},
		{[]string{"calc", "quorum"}, []string{"--members"}},
		{[]string{"calc", "quorum", "--members", "0"}, []string{"--members", "at least 1"}},
		{[]string{"calc", "quorum", "--members", "5", "--votes", "6", "--term", "2", "--last-term", "1"}, []string{"--votes", "0 to"}},
		{[]string{"calc", "quorum", "--members", "5", "--votes", "-1", "--term", "2", "--last-term", "1"}, []string{"--votes"}},
		{[]string{"calc", "quorum", "--members", "5", "--votes", "3"}, []string{"--term"}},
		{[]string{"calc", "quorum", "--members", "5", "--votes", "3", "--term", "-1", "--last-term", "0"}, []string{"--term", "at least 0"}},
		{[]string{"calc", "quorum", "--members", "5", "extra"}, []string{`"extra"`}},
		{[]string{"calc", "activation", "--lease", "8s"}, []string{"--epsilon"}},
		{[]string{"calc", "activation", "--epsilon", "1s"}, []string{"--lease"}},
		{[]string{"calc", "activation", "--lease", "-8s", "--epsilon", "150ms"}, []string{"--lease", "at least 0s"}},
		{[]string{"calc", "activation", "--lease", "8s", "--epsilon", "-1ms"}, []string{"--epsilon"}},
		{[]string{"calc", "activation", "--lease", "8s", "--epsilon", "1ms", "--ready", "-1s"}, []string{"--ready"}},
		{[]string{"calc", "activation", "--lease", "8", "--epsilon", "1ms"}, []string{"-lease"}},
		{[]string{"calc", "activation", "--lease", "2000000h", "--epsilon", "1000000h"}, []string{"--epsilon"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			checkUsageError(t, tt.args, tt.wants...)
		})
	}
}
