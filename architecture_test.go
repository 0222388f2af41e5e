package baton_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: docs/ARCHITECTURE.md's package map
// has a row for every package of the module (every directory that
// `go list ./...` would list: one with a .go file, outside testdata and
// directories whose name begins with "." or "_"), and no row for a
// package that does not exist, so that the map cannot go stale.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	err = walkGoFiles(func(path string) error {
		packages[filepath.ToSlash(filepath.Dir(path))] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !packages["."] || !packages["store"] || len(packages) < 10 {
		t.Fatalf("found %d packages (%v): the walk is broken", len(packages), packages)
	}

	// The map's rows: "| `path` | what it is for | imported by |".
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	named := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		named[m[1]] = true
	}
	for p := range packages {
		if !named[p] {
			t.Errorf("docs/ARCHITECTURE.md has no row for the package %s: add \"| `%s` | what it is for | who may import it |\" to its package map", p, p)
		}
	}
	for p := range named {
		if !packages[p] {
			t.Errorf("docs/ARCHITECTURE.md has a row for %s, which is no package of this module: remove or rename the row", p)
		}
	}
}

// walkGoFiles calls fn with the path of every .go file of the module's
// packages: every directory that `go list ./...` would list, outside
// testdata, directories whose name begins with "." or "_", and other
// modules.
func walkGoFiles(fn func(path string) error) error {
	return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != "." && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			return fn(path)
		}
		return nil
	})
}
