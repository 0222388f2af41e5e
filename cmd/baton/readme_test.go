package main

import (
	"os"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// The README shows a drill table; the drill is exact and repeatable, so
// the table must be what the command prints today.
func TestReadmeDrillTable(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own drill, in-process
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

// docs/fencing.md's "Fencing from any language" shows the output of baton
// fence sql --dialect sqlite and the two billing jobs that
// TestProcessFenceAnyLanguage runs, as they are.
func TestReadmeFenceAnyLanguage(t *testing.T) {
	b, err := os.ReadFile("../../docs/fencing.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const prompt = "$ baton fence sql --dialect sqlite\n"
	_, after, ok := strings.Cut(readme, prompt)
	if !ok {
		t.Fatalf("docs/fencing.md no longer shows %q", prompt)
	}
	want, _, _ := strings.Cut(after, "```")
	code, got, stderr := runBaton(t, "fence", "sql", "--dialect", "sqlite")
	if code != 0 {
		t.Fatalf("fence sql exited %d: %s", code, stderr)
	}
	if got != want {
		t.Errorf("docs/fencing.md's SQLite fence differs from the command's output:\n--- README\n%s\n--- baton fence sql\n%s", want, got)
	}
	for file, lang := range map[string]string{"billing.py": "python", "billing.sh": "sh"} {
		src, err := os.ReadFile("../../examples/anylang/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(readme, "```"+lang+"\n"+string(src)+"```\n") {
			t.Errorf("docs/fencing.md does not show examples/anylang/%s as it is: copy the file into the section Fencing from any language", file)
		}
	}
}
