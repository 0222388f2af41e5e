package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/batonhq/baton/internal/testenv"
)

// scrape reads url's /metrics and returns its families, parsed as
// Prometheus would.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s/metrics: %v", base, err)
	}
	return mfs
}

// gauge returns the value of a gauge of mfs labelled name=job.
func gauge(mfs map[string]*dto.MetricFamily, fam, job string) (float64, bool) {
	mf := mfs[fam]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == job {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// get returns the status code and body of url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var servingRE = regexp.MustCompile(`msg="serving metrics".* addr=(\S+)`)

// metricsBase waits for a baton process to log its metrics address.
func metricsBase(t *testing.T, errb *syncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingRE.FindStringSubmatch(errb.String()); m != nil {
			return "http://" + m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no metrics address logged:\n%s", errb.String())
	return ""
}

// Two real baton processes with --metrics-addr: the leader's /metrics shows
// it leading with its token, the follower's not; /readyz answers 200 on
// both; after SIGINT to the leader the follower shows itself leading with
// the next token within a second.
func TestProcessMetricsHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	testenv.ParallelUnlessLong(t) // its own store and processes; mostly waits
	db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	args := func(node string) []string {
		return []string{"run", "--store", db, "--node", node, "--lease", "3s", "--metrics-addr", "127.0.0.1:0",
			"svc", "--", "sh", "-c", "while :; do sleep 0.05; done"}
	}
	a, _, aerr := startBaton(t, args("a")...)
	abase := metricsBase(t, aerr)
	mustWait(t, 10*time.Second, "a leads", func() bool {
		v, _ := gauge(scrape(t, abase), "baton_leader", "svc")
		return v == 1
	})
	_, _, berr := startBaton(t, args("b")...)
	bbase := metricsBase(t, berr)
	mustWait(t, 10*time.Second, "b campaigns", func() bool {
		code, _ := get(t, bbase+"/readyz")
		return code == http.StatusOK
	})

	am, bm := scrape(t, abase), scrape(t, bbase)
	atok, _ := gauge(am, "baton_token", "svc")
	if v, _ := gauge(am, "baton_leader", "svc"); v != 1 || atok < 1 {
		t.Fatalf("leader a: baton_leader %v baton_token %v", v, atok)
	}
	if v, ok := gauge(bm, "baton_leader", "svc"); v != 0 || !ok {
		t.Fatalf("follower b: baton_leader %v (present %v), want 0", v, ok)
	}
	if v, _ := gauge(bm, "baton_token", "svc"); v != 0 {
		t.Fatalf("follower b: baton_token %v, want 0", v)
	}
	for _, base := range []string{abase, bbase} {
		if code, body := get(t, base+"/readyz"); code != http.StatusOK || body != "ready\n" {
			t.Fatalf("%s/readyz: %d %q", base, code, body)
		}
		if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("%s/healthz: %d %q", base, code, body)
		}
	}

	// a renews: its renewal latency and the lease it had left are recorded.
	mustWait(t, 5*time.Second, "a renews", func() bool {
		mf := scrape(t, abase)["baton_lease_remaining_seconds"]
		return mf != nil && mf.GetMetric()[0].GetHistogram().GetSampleCount() > 0
	})
	if mf := scrape(t, abase)["baton_renewal_duration_seconds"]; mf == nil || mf.GetMetric()[0].GetHistogram().GetSampleCount() == 0 {
		t.Fatalf("a renewed but recorded no renewal latency: %v", mf)
	}

	delay := testenv.MeasureDelay(t)
	began := time.Now()
	a.Process.Signal(os.Interrupt)
	mustWait(t, 5*time.Second, "b leads", func() bool {
		v, _ := gauge(scrape(t, bbase), "baton_leader", "svc")
		return v == 1
	})
	took := time.Since(began)
	t.Logf("b's /metrics showed it leading %v after SIGINT to a", took.Round(time.Millisecond))
	if bound := delay.Slack(time.Second, began, time.Now()); took > bound {
		t.Errorf("handover took %v as seen on /metrics, want under a second and the scheduling delay measured (%v)", took, bound)
	}
	if v, _ := gauge(scrape(t, bbase), "baton_token", "svc"); v != atok+1 {
		t.Errorf("b's baton_token %v, want %v", v, atok+1)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("a: %v\n%s", err, aerr.String())
	}
}

// A bad --metrics-addr is a usage error naming the flag.
func TestMetricsAddrInvalid(t *testing.T) {
	var out, errb strings.Builder
	code := run(t.Context(), []string{"run", "--store", "mem:", "--metrics-addr", "nope", "svc", "--", "true"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "--metrics-addr") || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("exit %d stderr %q", code, errb.String())
	}
}

// mustWait fails the test unless cond holds within d.
func mustWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !testenv.WaitFor(d, cond) {
		t.Fatalf("timed out after %v waiting until %s", d, what)
	}
}

// The /metrics of a fresh 'baton run' has every counter at 0 before
// anything happened, the build info, and no label named "job" (which
// Prometheus attaches to every scraped series itself).
func TestProcessMetricsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	_, _, errb := startBaton(t, "run", "--store", db, "--lease", "3s", "--every", "1h", "--metrics-addr", "127.0.0.1:0",
		"billing", "--", "true")
	base := metricsBase(t, errb)
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`baton_fence_rejections_total{name="billing"} 0`,
		`baton_store_errors_total{name="billing"} 0`,
		`baton_transitions_total{cause="store-lost",name="billing"} 0`,
		`baton_job_periods_total{name="billing",state="failed"} 0`,
		`baton_build_info{goversion="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	for name, mf := range scrape(t, base) {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" || l.GetName() == "instance" {
					t.Errorf("%s has the label %q", name, l.GetName())
				}
			}
		}
	}
}
