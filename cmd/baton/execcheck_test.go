package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command that the kernel would not start is refused before
// campaigning, in every mode: exit 2, one line, nothing written (no
// token taken, no acquisition in the election log).
func TestRunRefusesCommandThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"text file with the executable bit", file("hostname", "vm-1\n", 0o755), []string{"is not a program", `"vm-1"`, "-- sh "}},
		{"empty file", file("empty", "", 0o755), []string{"empty file"}},
		{"not executable", file("script.sh", "#!/bin/sh\necho hi\n", 0o644), []string{"not executable by this user"}},
		{"missing interpreter", file("bad.sh", "#!/nonexistent/bin/sh\necho hi\n", 0o755), []string{`interpreter "/nonexistent/bin/sh"`}},
		{"no interpreter", file("none.sh", "#!\n", 0o755), []string{"names no interpreter"}},
		{"directory", sub, []string{"is a directory"}},
		{"escapes what it quotes", file("esc", "\x1b[2J", 0o755), []string{`\x1b[2J`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range [][]string{{"--once"}, {}, {"--every", "1m"}} {
				e, _, errb, ms := shared()
				args := append(append([]string{"run", "--store", "mem:"}, mode...), "j", "--", tc.path)
				code := e.run(t.Context(), args)
				checkOneLine(t, args, code, errb.String(), append([]string{"cannot be run"}, tc.want...)...)
				if strings.ContainsRune(errb.String(), 0x1b) {
					t.Errorf("%v: stderr holds a raw ESC: %q", args, errb)
				}
				untouched(t, ms, "j")
			}
		})
	}
	// What the kernel starts passes: a script with an interpreter, a
	// binary found on $PATH.
	for _, name := range []string{file("ok.sh", "#!/bin/sh\nexit 0\n", 0o755), "true"} {
		if err := checkCommand(name); err != nil {
			t.Errorf("checkCommand(%q) = %v", name, err)
		}
	}
}

// The acceptance line on an SQLite store: 'run --once -- FILE' with a file
// that is not a program exits 2, and 'baton history' shows no acquisition.
func TestRunOnceNotAProgramHistory(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "hostname")
	if err := os.WriteFile(text, []byte("vm-1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(text, 0o755); err != nil {
		t.Fatal(err)
	}
	u := "sqlite:" + filepath.Join(dir, "s.db")
	if code, _, errOut := runBaton(t, "store", "floor", "--store", u, "j", "1"); code != exitOK {
		t.Fatal(errOut)
	}
	args := []string{"run", "--once", "--store", u, "j", "--", text}
	code, _, errOut := runBaton(t, args...)
	checkOneLine(t, args, code, errOut, "is not a program")
	code, out, errOut := runBaton(t, "history", "--store", u, "j")
	// The header, the floor's event, and the name's state now.
	if code != exitOK || strings.Contains(out, "acquired") || strings.Count(out, "\n") != 4 || !strings.Contains(out, "token-floor-raised") {
		t.Fatalf("history after the refused run: exit %d\n%s%s", code, out, errOut)
	}
}
