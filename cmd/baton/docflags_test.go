package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guideFiles are the README and the guides that hold what it held before
// it became a front page: TestDocsNameRealFlags reads them all.
var guideFiles = []string{"README.md", "docs/run.md", "docs/fencing.md", "docs/operate.md", "docs/library.md",
	"docs/groups.md", "docs/production.md", "docs/evidence.md", "docs/development.md"}

// commandFlags returns the flags of every command and operation (by its
// arguments joined with a space, "run", "fence proxy") as its --help
// lists them, and the help texts themselves.
func commandFlags(t *testing.T) (flags map[string]map[string]bool, helps map[string]string) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	flags, helps = map[string]map[string]bool{}, map[string]string{}
	for _, args := range helpCommands() {
		cmd := strings.Join(args, " ")
		_, out, _ := runBaton(t, append(args, "--help")...)
		helps[cmd] = out
		flags[cmd] = map[string]bool{}
		for _, m := range line.FindAllStringSubmatch(out, -1) {
			flags[cmd][m[1]] = true
		}
	}
	return flags, helps
}

// The README, the guides it moved into docs/ (guideFiles) and every
// command's --help name only flags baton has, and a flag said to be some
// command's ("--poll of 'baton run'") is that command's.
func TestDocsNameRealFlags(t *testing.T) {
	flags, helps := commandFlags(t)
	texts := map[string]string{}
	for _, name := range guideFiles {
		b, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	for cmd, h := range helps {
		texts["baton "+cmd+" --help"] = h
	}
	// Flags of other programs the README and the guides show.
	foreign := map[string]bool{"auto-compaction-retention": true, "bindir": true, "data": true, "help": true,
		"ignore-missing": true, "build-arg": true} // sha256sum's and podman's, in the install section
	any := regexp.MustCompile(`(?:^|[\s(\x60'"\[])--([a-z][a-z0-9-]+)`)
	of := regexp.MustCompile("--([a-z][a-z0-9-]+)`? of [`']baton ([a-z]+)")
	for where, text := range texts {
		for _, m := range any.FindAllStringSubmatch(text, -1) {
			known := foreign[m[1]]
			for _, fs := range flags {
				known = known || fs[m[1]]
			}
			if !known {
				t.Errorf("%s names --%s, which no baton command has", where, m[1])
			}
		}
		for _, m := range of.FindAllStringSubmatch(text, -1) {
			if !flags[m[2]][m[1]] {
				t.Errorf("%s names --%s of 'baton %s', which has no such flag", where, m[1], m[2])
			}
		}
	}
}
