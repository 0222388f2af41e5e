package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// needsReport matches test code that can skip through Require: a call of
// it or Chromium, or an import of a package whose helpers call it.
var needsReport = regexp.MustCompile(`testenv\.(Require|Chromium)\(|"github\.com/batonhq/baton/internal/(pgtest|etcdtest|netns|browsertest)"`)

// reports matches a TestMain that reports the skips: through Run, or
// pgtest.Main, which calls it.
var reports = regexp.MustCompile(`testenv\.Run\(m\)|pgtest\.Main\(m\)`)

// TestEveryPackageReportsSkips: every package of the module whose tests
// can skip through Require has a TestMain that reports the skips (Run), so
// that no package's `go test` skips silently.
func TestEveryPackageReportsSkips(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two levels up: %v", err)
	}
	needs, has := map[string]string{}, map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if m := needsReport.Find(src); m != nil && needs[dir] == "" {
			needs[dir] = filepath.Base(path) + ": " + string(m)
		}
		if reports.Match(src) {
			has[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(needs) == 0 {
		t.Fatal("no package's tests can skip through Require: the search is broken")
	}
	for dir, why := range needs {
		if !has[dir] {
			t.Errorf("%s: its tests can skip through testenv.Require (%s) but its TestMain does not report the skips: call os.Exit(testenv.Run(m)) or pgtest.Main(m)", dir, why)
		}
	}
}
