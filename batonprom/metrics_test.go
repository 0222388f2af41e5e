package batonprom_test

import (
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonprom"
	"github.com/batonhq/baton/internal/electortest"
	"github.com/batonhq/baton/store/memstore"
)

func newMetrics(t *testing.T) (*batonprom.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := batonprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// gather returns the value of metric family fam for the label pairs given
// as "k=v" (a counter, a gauge, or a histogram's sample count).
func gather(t *testing.T, reg *prometheus.Registry, fam string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != fam {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range labels {
				k, v, _ := strings.Cut(l, "=")
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

func TestMetricsFollowLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		ma, rega := newMetrics(t)
		mb, regb := newMetrics(t)
		a := electortest.NewElector(t, st.Client("a"), "a", baton.WithObserver(ma))
		b := electortest.NewElector(t, st.Client("b"), "b", baton.WithObserver(mb))

		if err := ma.Ready("billing", time.Now()); err == nil {
			t.Fatal("Ready before campaigning: want an error")
		}
		term := electortest.MustCampaign(t, a)
		wonB := electortest.Campaign(t.Context(), b)
		time.Sleep(5 * electortest.Renew)
		synctest.Wait()

		if got := gather(t, rega, "baton_leader", "name=billing"); got != 1 {
			t.Fatalf("leader a: baton_leader %v, want 1", got)
		}
		if got := gather(t, rega, "baton_token", "name=billing"); got != float64(term.Token()) {
			t.Fatalf("leader a: baton_token %v, want %d", got, term.Token())
		}
		if got := gather(t, regb, "baton_leader", "name=billing"); got != 0 {
			t.Fatalf("follower b: baton_leader %v, want 0", got)
		}
		if n := gather(t, rega, "baton_renewal_duration_seconds", "name=billing"); n < 4 {
			t.Fatalf("renewal latency samples %v after 5 renew intervals, want at least 4", n)
		}
		if n := gather(t, rega, "baton_lease_remaining_seconds", "name=billing"); n < 4 {
			t.Fatalf("lease remaining samples %v, want at least 4", n)
		}
		for _, m := range []*batonprom.Metrics{ma, mb} {
			if err := m.Ready("billing", time.Now()); err != nil {
				t.Fatalf("Ready while leading or campaigning: %v", err)
			}
		}

		// The store stops answering a: its lease expires and b takes over.
		st.SetUnreachable("a", true)
		w := <-wonB
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		synctest.Wait()
		if got := gather(t, rega, "baton_transitions_total", "name=billing", "cause=lease-expired"); got != 1 {
			t.Fatalf("a: lease-expired transitions %v, want 1", got)
		}
		if got := gather(t, rega, "baton_leader", "name=billing"); got != 0 {
			t.Fatalf("a after losing: baton_leader %v, want 0", got)
		}
		if got := gather(t, regb, "baton_token", "name=billing"); got != float64(w.Term.Token()) || w.Term.Token() != term.Token()+1 {
			t.Fatalf("b: baton_token %v, term token %d, want %d", got, w.Term.Token(), term.Token()+1)
		}
		if got := gather(t, rega, "baton_store_errors_total", "name=billing"); got == 0 {
			t.Fatal("a: no store errors counted while unreachable")
		}

		// a campaigns again against a store that keeps failing: not ready
		// once the failures have lasted a lease.
		wonA := electortest.Campaign(t.Context(), a)
		time.Sleep(2 * electortest.Lease)
		synctest.Wait()
		if err := ma.Ready("billing", time.Now()); err == nil || !strings.Contains(err.Error(), "store has been failing") {
			t.Fatalf("Ready with a failing store: %v", err)
		}
		st.SetUnreachable("a", false)
		time.Sleep(2 * electortest.Poll)
		synctest.Wait()
		if err := ma.Ready("billing", time.Now()); err != nil {
			t.Fatalf("Ready after the store came back: %v", err)
		}
		if err := w.Term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := <-wonA; got.Err != nil {
			t.Fatal(got.Err)
		}
		if got := gather(t, regb, "baton_transitions_total", "name=billing", "cause=resigned"); got != 1 {
			t.Fatalf("b: resigned transitions %v, want 1", got)
		}
	})
}

func TestMetricsJobsAndFence(t *testing.T) {
	m, reg := newMetrics(t)
	m.PeriodState("billing", "done")
	m.RunStarted("billing", 1500*time.Millisecond)
	m.RunSucceeded("billing", time.Unix(1700000000, 0))
	m.FenceRejected("billing")
	if got := gather(t, reg, "baton_fence_rejections_total", "name=billing"); got != 1 {
		t.Fatalf("fence rejections %v, want 1", got)
	}
	if got := gather(t, reg, "baton_job_last_success_timestamp_seconds", "name=billing"); got != 1700000000 {
		t.Fatalf("last success %v", got)
	}
	if got := gather(t, reg, "baton_job_periods_total", "name=billing", "state=done"); got != 1 {
		t.Fatalf("done periods %v", got)
	}
	if got := gather(t, reg, "baton_job_start_delay_seconds", "name=billing"); got != 1 {
		t.Fatalf("start delay samples %v", got)
	}
	m.ClockHeld("billing", true, 10*time.Minute)
	if got := gather(t, reg, "baton_job_clock_held", "name=billing"); got != 1 {
		t.Fatalf("clock held %v while held, want 1", got)
	}
	m.ClockHeld("billing", false, 0)
	if got := gather(t, reg, "baton_job_clock_held", "name=billing"); got != 0 {
		t.Fatalf("clock held %v after, want 0", got)
	}
	if _, err := batonprom.New(reg); err == nil {
		t.Fatal("a second Metrics on one registry: want an error")
	}
}

// families returns every family of reg by name.
func families(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// noLabel fails unless no series of reg has the label named label.
func noLabel(t *testing.T, reg *prometheus.Registry, label string) {
	t.Helper()
	for name, mf := range families(t, reg) {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					t.Fatalf("%s has a label %q (Prometheus attaches its own)", name, label)
				}
			}
		}
	}
}

// Every counter and cause is exported at 0 as soon as a name is tracked,
// and the build info at once; no series has a label "job".
func TestMetricsExportedAtZero(t *testing.T) {
	m, reg := newMetrics(t)
	fams := families(t, reg)
	info := fams["baton_build_info"]
	if info == nil || len(info.GetMetric()) != 1 || info.GetMetric()[0].GetGauge().GetValue() != 1 ||
		!hasLabel(info.GetMetric()[0], "goversion", runtime.Version()) {
		t.Fatalf("baton_build_info: %v", info)
	}
	for _, l := range info.GetMetric()[0].GetLabel() {
		if l.GetName() == "version" && l.GetValue() == "" {
			t.Fatal("baton_build_info has an empty version")
		}
	}
	for _, c := range []string{"elected", "lease-expired", "deposed", "resigned", "store-lost", "stopped"} {
		if !present(t, reg, "baton_group_transitions_total", "cause="+c) {
			t.Errorf("baton_group_transitions_total{cause=%q} absent from the start", c)
		}
	}
	m.TrackJob("billing")
	m.Track("svc")
	for _, want := range [][]string{
		{"baton_fence_rejections_total", "name=svc"},
		{"baton_store_errors_total", "name=svc"},
		{"baton_leader", "name=svc"},
		{"baton_token", "name=svc"},
		{"baton_fence_rejections_total", "name=billing"},
		{"baton_job_periods_total", "name=billing", "state=done"},
		{"baton_job_periods_total", "name=billing", "state=failed"},
		{"baton_job_periods_total", "name=billing", "state=skipped"},
		{"baton_job_clock_held", "name=billing"},
		{"baton_transitions_total", "name=svc", "cause=elected"},
		{"baton_transitions_total", "name=svc", "cause=lease-expired"},
		{"baton_transitions_total", "name=svc", "cause=store-lost"},
	} {
		if !present(t, reg, want[0], want[1:]...) || gather(t, reg, want[0], want[1:]...) != 0 {
			t.Errorf("%v: not exported at 0 after Track", want)
		}
	}
	if present(t, reg, "baton_job_periods_total", "name=svc") {
		t.Error("a name that is not a job has job series")
	}
	noLabel(t, reg, "job")
	noLabel(t, reg, "instance")
}

// present reports whether fam has a series with the label pairs ("k=v").
func present(t *testing.T, reg *prometheus.Registry, fam string, labels ...string) bool {
	t.Helper()
	mf := families(t, reg)[fam]
next:
	for _, m := range mf.GetMetric() {
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			if !hasLabel(m, k, v) {
				continue next
			}
		}
		return true
	}
	return false
}

// A Group exports aggregates over its names, not a series per name: the
// names held, terms won and ended by cause, the session's renewal latency.
func TestMetricsGroupAggregates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newMetrics(t)
		g, err := baton.NewGroup(memstore.New(), baton.WithNode("a"), baton.WithLease(electortest.Lease), baton.WithRenew(electortest.Renew),
			baton.WithClockMargin(electortest.Margin), baton.WithPoll(electortest.Poll), baton.WithObserver(m))
		if err != nil {
			t.Fatal(err)
		}
		names := electortest.ShardNames(500)
		if err := g.Hold(t.Context(), names, nil); err != nil {
			t.Fatal(err)
		}
		electortest.WaitHeld(t, g, len(names), electortest.Lease)
		time.Sleep(5 * electortest.Renew)
		synctest.Wait()
		if got := gather(t, reg, "baton_group_names_held"); got != 500 {
			t.Fatalf("baton_group_names_held %v, want 500", got)
		}
		if got := gather(t, reg, "baton_group_transitions_total", "cause=elected"); got != 500 {
			t.Fatalf("elected %v, want 500", got)
		}
		if n := gather(t, reg, "baton_session_renewal_duration_seconds"); n < 4 {
			t.Fatalf("%v session renewals recorded in 5 renew intervals", n)
		}
		series := 0
		for _, mf := range families(t, reg) {
			series += len(mf.GetMetric())
		}
		if series > 20 {
			t.Fatalf("%d series for a Group of 500 names; want aggregates", series)
		}
		if err := g.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := gather(t, reg, "baton_group_names_held"); got != 0 {
			t.Fatalf("baton_group_names_held %v after Close", got)
		}
		if got := gather(t, reg, "baton_group_transitions_total", "cause=resigned"); got != 500 {
			t.Fatalf("resigned %v after Close, want 500", got)
		}
	})
}
