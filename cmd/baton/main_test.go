package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// runBaton runs the CLI with args and returns its exit code and output.
// The output is written under a lock: a command that gives up on closing
// a Group in time (bench, after a store call timed out) returns while the
// Group's goroutines may still log.
func runBaton(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncBuffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// checkUsageError asserts exit 2 with exactly one line on stderr that
// contains every one of wants.
func checkUsageError(t *testing.T, args []string, wants ...string) {
	t.Helper()
	code, _, stderr := runBaton(t, args...)
	checkOneLine(t, args, code, stderr, wants...)
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := runBaton(t, "help")
	if code != exitOK {
		t.Fatalf("baton help: exit %d", code)
	}
	for _, name := range []string{"model", "calc"} {
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("baton help does not list %q:\n%s", name, out)
		}
	}
}
