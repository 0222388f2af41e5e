//go:build !nolab

package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// labPackages are the module paths the operator's binary must not link:
// the etcd server and raft (an embedded etcd cluster, for the net drill)
// and porcupine (the net drill's linearizability check). They are the
// lab build's (-tags lab).
var labPackages = []string{"go.etcd.io/etcd/server/", "go.etcd.io/raft/", "github.com/anishathalye/porcupine"}

// goListDeps returns the packages ./cmd/baton links with the given build
// flags, from 'go list -deps'.
func goListDeps(t *testing.T, flags ...string) []string {
	t.Helper()
	args := append(append([]string{"list"}, flags...), "-deps", "github.com/batonhq/baton/cmd/baton")
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}

// labLinked returns the packages of deps that are the lab's.
func labLinked(deps []string) []string {
	var out []string
	for _, p := range deps {
		for _, lab := range labPackages {
			if strings.HasPrefix(p+"/", lab) {
				out = append(out, p)
			}
		}
	}
	return out
}

// The operator's binary (what 'go install .../cmd/baton' and the release
// build) links neither the etcd server, raft nor porcupine. The lab build
// does, which shows the check sees them when they are there.
func TestOperatorBinaryLinksNoLab(t *testing.T) {
	testenv.ParallelUnlessLong(t) // two go list runs, nothing shared
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	if bad := labLinked(goListDeps(t)); len(bad) > 0 {
		t.Fatalf("cmd/baton links %d lab packages (move what imports them behind -tags lab): %s", len(bad), strings.Join(bad, " "))
	}
	lab := labLinked(goListDeps(t, "-tags", "lab"))
	for _, want := range labPackages {
		found := false
		for _, p := range lab {
			found = found || strings.HasPrefix(p+"/", want)
		}
		if !found {
			t.Errorf("the lab build (-tags lab) links no %s*: the net drill is not wired in lab.go", want)
		}
	}
}

// Without the lab build, the net drill is one clear line pointing to it
// (exit 2), after the flags are checked, and its etcd member too.
func TestDrillNetNeedsLab(t *testing.T) {
	if drillLab != nil {
		t.Skip("this is the lab build: net mode is linked")
	}
	code, _, stderr := runBaton(t, "drill", "--net", "etcd3", "--soak", "16s")
	want := "baton drill: --net etcd3: needs the lab build: go run -tags lab ./cmd/baton drill --net etcd3\n"
	if code != exitUsage || stderr != want {
		t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, want)
	}
	code, _, stderr = runBaton(t, "drill", "etcd-member", "--name", "m0")
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "needs the lab build") {
		t.Fatalf("drill etcd-member: exit %d, stderr %q; want exit %d and one line naming the lab build", code, stderr, exitUsage)
	}
}

// releaseOnly are the packages the default build links for the lab's
// commands (drill, sim, bench) and gRPC's request tracing, which the
// release build (scripts/release.sh's tags) leaves out. text/template
// (under html/template: the drill's report) is among them for the size
// of the operator's binary: its field lookup calls reflect's
// MethodByName, and a program that can reach that call keeps every
// exported method of every type it links (2.9 MB of this binary). The
// serve page is written without it (pagehtml.go).
var releaseOnly = []string{
	"github.com/batonhq/baton/internal/lab/drill",
	"github.com/batonhq/baton/internal/lab/sim",
	"github.com/batonhq/baton/internal/lab/vcluster",
	"golang.org/x/net/trace",
	"html/template",
	"text/template",
}

// releaseTags returns the build tags scripts/release.sh builds with (its
// tags= line).
func releaseTags(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../scripts/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^tags=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("scripts/release.sh has no tags= line")
	}
	return string(m[1])
}

// The release build, the operator's binary, links neither the lab's
// commands nor gRPC's tracing (nor the lab build's etcd server); the
// default build, which the README's first command runs, links them,
// which shows the check sees them when they are there.
func TestReleaseBuildLeavesOutTheLab(t *testing.T) {
	testenv.ParallelUnlessLong(t) // two go list runs, nothing shared
	tags := releaseTags(t)
	if !strings.Contains(","+tags+",", ",nolab,") {
		t.Fatalf("scripts/release.sh builds with tags %q: want nolab among them", tags)
	}
	has := func(deps []string) map[string]bool {
		m := map[string]bool{}
		for _, p := range deps {
			m[p] = true
		}
		return m
	}
	rel := goListDeps(t, "-tags", tags)
	if bad := labLinked(rel); len(bad) > 0 {
		t.Errorf("the release build links lab packages: %s", strings.Join(bad, " "))
	}
	relHas, defHas := has(rel), has(goListDeps(t))
	for _, p := range releaseOnly {
		if relHas[p] {
			t.Errorf("the release build (-tags %s) links %s", tags, p)
		}
		if !defHas[p] {
			t.Errorf("the default build does not link %s: drop it from releaseOnly or find where it went", p)
		}
	}
}
