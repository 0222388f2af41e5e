package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain reports, like every package whose tests can skip through
// Require; TestRunReports runs this binary as a child to see it.
func TestMain(m *testing.M) { os.Exit(Run(m)) }

// childVar makes TestSkipChild skip through Require, in the child that
// TestRunReports starts.
const childVar = "BATON_TESTENV_CHILD"

// TestSkipChild skips through Require for the component "fake" when
// TestRunReports runs it in a child; otherwise it does nothing.
func TestSkipChild(t *testing.T) {
	if os.Getenv(childVar) != "1" {
		return
	}
	t.Run("sub", func(t *testing.T) { Require(t, "fake", "no fake on PATH (apt-get install fake)") })
	Require(t, "fake", "no fake on PATH (apt-get install fake)")
}

// TestRunReports: a test binary whose TestMain calls Run ends with one
// line naming the package, the missing component, how many tests skipped
// for it and which; with BATON_REQUIRE listing the component the tests
// fail instead, and nothing is reported as skipped.
func TestRunReports(t *testing.T) {
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipChild$", "-test.v=true")
		cmd.Env = append(os.Environ(), childVar+"=1", RequireVar+"="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("")
	if err != nil {
		t.Fatalf("child without %s: %v\n%s", RequireVar, err, out)
	}
	want := "baton: github.com/batonhq/baton/internal/testenv: skipped 2 tests (TestSkipChild, TestSkipChild/sub): fake unavailable: no fake on PATH (apt-get install fake) (set BATON_REQUIRE=fake to make this a failure)\n"
	if !strings.Contains(out, want) {
		t.Errorf("child's output lacks the report line\n%s\nwant a line\n%s", out, want)
	}
	if n := strings.Count(out, "baton: "); n != 1 {
		t.Errorf("child printed %d report lines, want 1:\n%s", n, out)
	}

	out, err = run("fake")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("child with %s=fake: err = %v, want a failing exit\n%s", RequireVar, err, out)
	}
	if !strings.Contains(out, "fake is required") || strings.Contains(out, "baton: ") {
		t.Errorf("child with %s=fake: want a failure naming fake and no skip report, got\n%s", RequireVar, out)
	}
}

// fakeTB records what Require asks of a test; Fatalf and Skipf end the
// call by panicking, as the real ones end the test.
type fakeTB struct {
	testing.TB
	name, fatal, skip string
}

type ended struct{}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(ended{})
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	panic(ended{})
}

func (f *fakeTB) require(component, why string) {
	defer func() {
		if r := recover(); r != nil && r != (ended{}) {
			panic(r)
		}
	}()
	Require(f, component, why)
}

// TestSkipReport: Require records its skips by component, in the order
// of the first, and the report lists at most three test names, sorted,
// and the first reason, counting the others; a failure (BATON_REQUIRE) is
// not recorded as a skip.
func TestSkipReport(t *testing.T) {
	skips.mu.Lock()
	saved := skips.by
	savedOrder := skips.order
	skips.by, skips.order = nil, nil
	skips.mu.Unlock()
	t.Cleanup(func() {
		skips.mu.Lock()
		skips.by, skips.order = saved, savedOrder
		skips.mu.Unlock()
	})
	t.Setenv(RequireVar, "etcd")

	if got := skipReport("p"); got != "" {
		t.Fatalf("report with no skips = %q, want none", got)
	}
	for _, name := range []string{"TestD", "TestB", "TestA", "TestC"} {
		f := &fakeTB{name: name}
		f.require("postgres", "pg_config not found\n(a second line)")
		if f.skip == "" || f.fatal != "" {
			t.Fatalf("Require(postgres) without it in %s: skip %q, fatal %q; want a skip", RequireVar, f.skip, f.fatal)
		}
	}
	f := &fakeTB{name: "TestE"}
	f.require("chromium", "no chromium on PATH")
	f = &fakeTB{name: "TestG"}
	f.require("postgres", "psql is not on PATH")
	f = &fakeTB{name: "TestF"}
	f.require("etcd", "etcd does not start")
	if f.fatal == "" || f.skip != "" {
		t.Fatalf("Require(etcd) with %s=etcd: skip %q, fatal %q; want a failure", RequireVar, f.skip, f.fatal)
	}

	want := "baton: p: skipped 5 tests (TestA, TestB, TestC, …): postgres unavailable: pg_config not found; and 1 other reason (go test -v shows each) (set BATON_REQUIRE=postgres to make this a failure)\n" +
		"baton: p: skipped 1 test (TestE): chromium unavailable: no chromium on PATH (set BATON_REQUIRE=chromium to make this a failure)\n"
	if got := skipReport("p"); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}
