package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/SECURITY.md: every row of the threat model names the tests that
// show it ("`PACKAGE` TestA, TestB; `OTHER` TestC"), and every test it
// names exists in the package it names.
func TestSecurityModelNamesItsTests(t *testing.T) {
	b, err := os.ReadFile("../../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	part := regexp.MustCompile("^`([^`]+)` (.*)$")
	testName := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	defined := map[string]string{} // package dir -> its test files' text
	source := func(pkg string) string {
		if s, ok := defined[pkg]; ok {
			return s
		}
		files, _ := filepath.Glob(filepath.Join("../..", pkg, "*_test.go"))
		var all strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		defined[pkg] = all.String()
		return defined[pkg]
	}
	rows, named := 0, 0
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		last := strings.TrimSpace(cells[len(cells)-1])
		if last == "shown by" {
			continue // a header
		}
		rows++
		tests := 0
		for _, p := range strings.Split(last, "; ") {
			m := part.FindStringSubmatch(p)
			if m == nil {
				t.Errorf("SECURITY.md:%d: %q does not name a package in backquotes and its tests", i+1, p)
				continue
			}
			for _, name := range testName.FindAllString(m[2], -1) {
				tests++
				if !strings.Contains(source(m[1]), "func "+name+"(") {
					t.Errorf("SECURITY.md:%d names %s in %s, which has no such test", i+1, name, m[1])
				}
			}
		}
		if tests == 0 {
			t.Errorf("SECURITY.md:%d: the row names no test: %q", i+1, line)
		}
		named += tests
	}
	if rows < 20 {
		t.Fatalf("SECURITY.md has %d rows: the tables were not read", rows)
	}
	t.Logf("%d rows, %d tests named", rows, named)
}
