package baton_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeFrontPage: README.md is a front page, under 400 lines, and
// opens with the two commands of the repository's contract, the drill and
// the tests, as its first code block.
func TestReadmeFrontPage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n >= 400 {
		t.Errorf("README.md has %d lines; a front page has fewer than 400: move the section into a guide under docs/ and link it", n)
	}
	_, block, ok := strings.Cut(readme, "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh code block")
	}
	if title, _, _ := strings.Cut(readme, "```sh\n"); strings.Count(title, "\n") > 2 {
		t.Errorf("README.md's first code block is not at its top:\n%s", title)
	}
	lines := strings.Split(block, "\n")
	for i, want := range []string{"go run ./cmd/baton drill ", "go test ./... "} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("README.md's first code block does not have %q on line %d:\n%s", strings.TrimSpace(want), i+1, block)
		}
	}
}

// TestDocLinksResolve: every relative link of README.md, the other *.md
// files of the root and docs/*.md names a file that exists, and a
// #fragment a heading of that file.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(root, docs...)
	link := regexp.MustCompile(`\]\(([^()\s]+)\)`)
	checked := 0
	for _, from := range docs {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			file := from
			if path != "" {
				file = filepath.Join(filepath.Dir(from), path)
			}
			checked++
			if fi, err := os.Stat(file); err == nil && fi.IsDir() && fragment == "" {
				continue // a directory: GitHub lists it
			}
			text, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s: %v", from, target, err)
				continue
			}
			if fragment != "" && strings.HasSuffix(file, ".md") && !anchors(string(text))[fragment] {
				t.Errorf("%s links to %s: %s has no heading whose anchor is #%s", from, target, file, fragment)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found: the pattern no longer matches Markdown links")
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// text (lower case, punctuation dropped, spaces as dashes), outside code
// blocks.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	code := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			code = !code
			continue
		}
		if code || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		set[slug.String()] = true
	}
	return set
}
