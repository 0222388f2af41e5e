package baton_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// modulePath is this module's import path.
const modulePath = "github.com/batonhq/baton"

// layers are the floors of the house, lowest first (docs/ARCHITECTURE.md,
// "Layers"). A package's code (not its tests) imports packages of its own
// floor or of floors below it, never above. A package path ending in
// "/..." names a directory and everything under it.
var layers = []struct {
	name string
	pkgs []string
}{
	{"base: the store contract and helpers that import nothing of baton's", []string{
		"store", "internal/bound", "internal/escape", "internal/backoff", "internal/monoclock"}},
	{"machines: the pure election and scheduler machines", []string{
		"internal/election", "internal/scheduler"}},
	{"library and stores", []string{
		".", "fence", "fence/fenceproxy", "fence/pgfence", "internal/scheduler/runner", "schedule", "batonprom",
		"store/storedriver", "store/memstore", "store/sqlite", "store/postgres", "store/etcd", "store/kube", "store/storeurl", "store/storetest"}},
	{"operator: what the CLI reads, checks and supervises with", []string{
		"internal/inspect", "internal/supervise", "internal/history", "internal/timeline"}},
	{"test kits: real components for tests, and shared test helpers", []string{
		"internal/testenv", "internal/pgtest", "internal/etcdtest", "internal/browsertest", "internal/benchenv",
		"internal/sqlitetest", "internal/electortest", "internal/testport"}},
	{"lab: the simulator, its cluster, the drills, the model and their checkers", []string{
		"internal/lab/..."}},
	{"commands: the CLI and the examples, which wire every floor below", []string{
		"cmd/...", "examples/..."}},
}

// floorOf returns the index in layers of the package at dir (a path
// relative to the module's root, "." for the root), or -1.
func floorOf(dir string) int {
	for i, l := range layers {
		for _, p := range l.pkgs {
			if p == dir || strings.HasSuffix(p, "/...") && strings.HasPrefix(dir+"/", strings.TrimSuffix(p, "...")) {
				return i
			}
		}
	}
	return -1
}

// TestLayersPointDown: every package of the module is on a floor, and no
// package's code imports a package on a higher floor.
func TestLayersPointDown(t *testing.T) {
	imports := moduleImports(t)
	if len(imports) < 30 || imports["cmd/baton"] == nil {
		t.Fatalf("read %d packages: the walk is broken", len(imports))
	}
	for dir, deps := range imports {
		from := floorOf(dir)
		if from < 0 {
			t.Errorf("the package %s is on no floor: add it to layers in layers_test.go and to docs/ARCHITECTURE.md's map", dir)
			continue
		}
		for dep, file := range deps {
			if to := floorOf(dep); to > from {
				t.Errorf("%s imports %s: %s (%q) is above %s (%q); move the code down, or the package up", file, dep, dep, layers[to].name, dir, layers[from].name)
			}
		}
	}
}

// TestLayersSeeAnUpwardImport: the check reads imports and floors as it
// should (a planted upward import is seen).
func TestLayersSeeAnUpwardImport(t *testing.T) {
	if floorOf("internal/election") >= floorOf("internal/lab/sim") || floorOf("internal/lab/drill/netdrill") != floorOf("internal/lab/sim") ||
		floorOf("cmd/baton") != len(layers)-1 || floorOf("internal/labx") != -1 || floorOf("nosuch") != -1 {
		t.Fatal("floorOf places packages wrongly")
	}
	imports := moduleImports(t)
	if _, ok := imports["internal/election"]["store"]; !ok {
		t.Fatalf("internal/election's imports were not read: %v", imports["internal/election"])
	}
}

// moduleImports returns, for each package directory of the module (outside
// testdata and other modules), the module's packages its non-test Go files
// import (under any build tag), each with one file that imports it.
func moduleImports(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	fset := token.NewFileSet()
	err := walkGoFiles(func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if out[dir] == nil {
			out[dir] = map[string]string{}
		}
		for _, im := range f.Imports {
			p, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			switch {
			case p == modulePath:
				out[dir]["."] = path
			case strings.HasPrefix(p, modulePath+"/"):
				out[dir][strings.TrimPrefix(p, modulePath+"/")] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
