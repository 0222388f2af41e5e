package main

import (
	"os"
	"strings"
	"testing"
)

// The README shows a drill table; the drill is exact and repeatable, so
// the table must be what the command prints today.
func TestReadmeDrillTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ go run ./cmd/baton drill --fault pause-before-effect\n"
	_, after, ok := strings.Cut(string(readme), prompt)
	if !ok {
		t.Fatalf("README.md no longer shows %q", prompt)
	}
	want, _, _ := strings.Cut(after, "```")
	code, got, stderr := runBaton(t, "drill", "--fault", "pause-before-effect")
	if code != 0 {
		t.Fatalf("drill exited %d: %s", code, stderr)
	}
	if got != want {
		t.Errorf("README.md's drill table differs from the command's output:\n--- README\n%s\n--- drill\n%s", want, got)
	}
}
