package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// The alerting rules of docs/operate.md are valid Prometheus rules: promtool check
// rules passes on them. Without promtool the test skips (fails when
// BATON_REQUIRE lists prometheus).
func TestReadmeAlertingRules(t *testing.T) {
	readme, err := os.ReadFile("../../docs/operate.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\ngroups:\n  - name: baton\n"
	_, after, ok := strings.Cut(string(readme), start)
	if !ok {
		t.Fatal("docs/operate.md no longer shows the alerting rules (a yaml block of the group baton)")
	}
	rules, _, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatal("the alerting rules block is not closed")
	}
	rules = strings.TrimPrefix(start, "```yaml\n") + rules
	for _, metric := range []string{"baton_leader", "baton_job_last_success_timestamp_seconds", "baton_fence_rejections_total",
		"baton_session_renewal_duration_seconds", "baton_group_names_held"} {
		if !strings.Contains(rules, metric) {
			t.Errorf("the alerting rules do not use %s", metric)
		}
	}
	// The fence alert counts baton's run ledger only, and says so.
	if _, fence, ok := strings.Cut(rules, "alert: BatonFenceRejections"); !ok {
		t.Error("the alerting rules lost BatonFenceRejections")
	} else if fence, _, _ = strings.Cut(fence, "- alert:"); !strings.Contains(fence, "run-ledger") || !strings.Contains(fence, "the job's own fence refusals are not in it") {
		t.Errorf("BatonFenceRejections does not say it counts the run ledger's refusals only:\n%s", fence)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Require(t, "prometheus", "no promtool on PATH (apt-get install prometheus)")
	}
	path := filepath.Join(t.TempDir(), "baton.rules.yml")
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules)
	}
	t.Logf("promtool check rules: %s", strings.TrimSpace(string(out)))
}
