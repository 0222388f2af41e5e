package main

import (
	"os"
	"strings"
	"testing"
)

// cliReference is docs/reference.md: 'baton help' (the commands and the
// exit status), then the --help of every command and operation that
// helpCommands walks, in that order, each as the command prints it.
func cliReference(t *testing.T) string {
	t.Helper()
	var toc, body strings.Builder
	section := func(args []string, title string) {
		code, out, stderr := runBaton(t, args...)
		if code != exitOK {
			t.Fatalf("baton %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		if strings.Contains(out, "```") {
			t.Fatalf("baton %s prints a Markdown fence, which would end its code block early", strings.Join(args, " "))
		}
		anchor := strings.ReplaceAll(strings.ReplaceAll(title, " ", "-"), ":", "")
		toc.WriteString("- [" + title + "](#" + anchor + ")\n")
		body.WriteString("## " + title + "\n\n```text\n$ baton " + strings.Join(args, " ") + "\n" + out + "```\n\n")
	}
	section([]string{"help"}, "baton help: the commands and the exit status")
	for _, args := range helpCommands() {
		section(append(args, "--help"), "baton "+strings.Join(args, " "))
	}
	return "# baton: the command-line reference\n\n" +
		"Every command's `--help`, as the code prints it, after `baton help`\n" +
		"(the commands and the exit status); the exit codes in full are in\n" +
		"[production.md](production.md#exit-status). Generated: a test fails when a\n" +
		"command's help differs from this file, and\n" +
		"`go test ./cmd/baton -run TestCLIReference -update` rewrites it.\n\n" +
		toc.String() + "\n" + strings.TrimSuffix(body.String(), "\n")
}

// TestCLIReference: docs/reference.md is what the commands' --help print
// today (-update rewrites it).
func TestCLIReference(t *testing.T) {
	const path = "../../docs/reference.md"
	got := cliReference(t)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: generate it with go test ./cmd/baton -run TestCLIReference -update", err)
	}
	if want := string(b); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/reference.md differs from the commands' --help at line %d:\n  file: %q\n  help: %q\nregenerate it: go test ./cmd/baton -run TestCLIReference -update", i+1, w, g)
			}
		}
	}
}
