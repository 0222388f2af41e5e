// Package batonprom records what baton's Electors, Groups and job runners
// do as Prometheus metrics (prometheus/client_golang), so that the root
// package links no metrics stack it is not asked for. Its Metrics is a
// baton.Observer and a schedule.ClockObserver.
package batonprom

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
)

// Metrics records what Electors, Groups and job runners do as Prometheus
// metrics, in a registry the caller passes in: the library keeps no global
// state and registers nothing by itself. One Metrics serves any number of
// Electors (one per name), Groups and job runners; pass it to each with
// baton.WithObserver, and to schedule.WithObserver for jobs.
//
// Per election name of an Elector, and per job (label "name"; no metric has
// a label "job" or "instance", which Prometheus attaches to every scraped
// series itself):
//
//	baton_leader                          1 while this process holds a term, else 0
//	baton_token                           the fencing token of the term it holds, 0 when not leading
//	baton_transitions_total{cause}        terms won (cause "elected") and ended ("lease-expired",
//	                                      "deposed", "resigned", "store-lost", "stopped")
//	baton_renewal_duration_seconds        latency of each renewal write, sent to answered (histogram)
//	baton_lease_remaining_seconds         lease time the term had left when a renewal succeeded,
//	                                      before the renewal moved the deadline (histogram)
//	baton_fence_rejections_total          run-ledger writes refused because their token was stale,
//	                                      and those the program reports (FenceRejected); not
//	                                      a job's own fence under baton run
//	baton_store_errors_total              store calls that failed (conflicts are answers, not errors)
//	baton_job_periods_total{state}        periods this process moved to a state: running, done,
//	                                      failed, skipped, pending
//	baton_job_start_delay_seconds         scheduled time to start of each run (histogram)
//	baton_job_last_success_timestamp_seconds  Unix time the last run finished done
//	baton_job_suspended                   1 while the job is suspended ('baton suspend') as this
//	                                      process last read it, else 0
//	baton_job_clock_held                  1 while the wall-clock guard (schedule.WithClockGuard)
//	                                      holds this process off the job, leading or having
//	                                      given its term up (WithClockStepDown), else 0
//
// A name's counters (every cause and state) are exported at 0 from the
// first time this Metrics hears of it (Track, or the Elector's start), so
// that alerts on them can be written before anything happened.
//
// A Group exports aggregates over all its names, not a series per name, so
// that 100,000 names cost a handful of series:
//
//	baton_group_names_held                names held now by this process's Groups
//	baton_group_transitions_total{cause}  terms of Group names won and ended, by cause as above
//	baton_group_store_errors_total        store calls of the Groups that failed
//	baton_session_renewal_duration_seconds  latency of each session renewal write (histogram)
//
// And once per process:
//
//	baton_build_info{version,goversion}   1; baton's module version and the Go version
//
// Metrics is safe for concurrent use.
type Metrics struct {
	leader      *prometheus.GaugeVec
	token       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	renewal     *prometheus.HistogramVec
	leaseLeft   *prometheus.HistogramVec
	fence       *prometheus.CounterVec
	storeErrs   *prometheus.CounterVec
	periods     *prometheus.CounterVec
	delay       *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	suspended   *prometheus.GaugeVec
	clockHeld   *prometheus.GaugeVec

	groupHeld        prometheus.Gauge
	groupTransitions *prometheus.CounterVec
	groupStoreErrs   prometheus.Counter
	sessionRenewal   prometheus.Histogram

	mu      sync.Mutex
	names   map[string]*nameState
	tracked map[string]bool
}

var (
	_ baton.Observer         = (*Metrics)(nil)
	_ schedule.ClockObserver = (*Metrics)(nil)
)

// causes are the values of the label "cause", in the order they are
// exported at 0.
var causes = []string{"elected", "lease-expired", "deposed", "resigned", "store-lost", "stopped"}

// periodStates are the values of the label "state" of baton_job_periods_total.
var periodStates = []store.RunState{store.Pending, store.Running, store.Done, store.Failed, store.Skipped}

// nameState is what Ready needs to know of one Elector.
type nameState struct {
	phase     string        // "idle", "campaigning", "leading"
	lease     time.Duration // the Elector's lease
	failSince time.Time     // first store failure of the current run of failures (zero: last call answered)
	lastErr   error
}

// New creates baton's metrics and registers them with reg. It fails if reg
// already holds metrics of the same names (one Metrics per registry). A
// nil reg is an error wrapping a *baton.OptionError naming registry.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("batonprom: %w", bound.Errorf("registry", "nil", "a prometheus.Registerer (e.g. prometheus.NewRegistry())"))
	}
	name := []string{"name"}
	m := &Metrics{
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_leader",
			Help: "1 while this process holds a term of the name, else 0."}, name),
		token: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_token",
			Help: "The fencing token of the term this process holds, 0 when it does not lead."}, name),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_transitions_total",
			Help: "Leadership transitions of this process by cause: elected, lease-expired, deposed, resigned, store-lost, stopped."}, []string{"name", "cause"}),
		renewal: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_renewal_duration_seconds",
			Help:    "Latency of the leader's renewal writes, from sending to the store's answer.",
			Buckets: renewBuckets}, name),
		leaseLeft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_lease_remaining_seconds",
			Help:    "Lease time the term had left when a renewal succeeded (before the renewal extended it).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60}}, name),
		fence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_fence_rejections_total",
			Help: fenceHelp}, name),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_store_errors_total",
			Help: "Store calls of the elector that failed (a compare-and-swap conflict is an answer, not an error)."}, name),
		periods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_job_periods_total",
			Help: "Periods this process moved to a state: pending, running, done, failed, skipped."}, []string{"name", "state"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_job_start_delay_seconds",
			Help:    "Delay from a period's scheduled time to the start of its run.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600, 24 * 3600}}, name),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_job_last_success_timestamp_seconds",
			Help: "Unix time at which the job's last successful run finished."}, name),
		groupHeld: prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_group_names_held",
			Help: "Names held now by this process's Groups."}),
		groupTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_group_transitions_total",
			Help: "Terms of Group names won and ended, by cause: elected, lease-expired, deposed, resigned, store-lost, stopped."}, []string{"cause"}),
		groupStoreErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "baton_group_store_errors_total",
			Help: "Store calls of this process's Groups that failed (a compare-and-swap conflict is an answer, not an error)."}),
		sessionRenewal: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "baton_session_renewal_duration_seconds",
			Help:    "Latency of a Group's session renewal writes, from sending to the store's answer.",
			Buckets: renewBuckets}),
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_job_suspended",
			Help: "1 while the job is suspended (baton suspend) as this process last read it, else 0."}, name),
		clockHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_job_clock_held",
			Help: "1 while the wall-clock guard holds this process off the job (its wall clock differs from the reference by more than the tolerance): as the leader it claims and skips no period; after giving the term up it does not campaign. Else 0."}, name),
		names:   map[string]*nameState{},
		tracked: map[string]bool{},
	}
	version, goversion := buildInfo()
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_build_info",
		Help:        "1, labelled with baton's module version and the Go version the program was built with.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goversion}})
	info.Set(1)
	for _, c := range []prometheus.Collector{m.leader, m.token, m.transitions, m.renewal, m.leaseLeft,
		m.fence, m.storeErrs, m.periods, m.delay, m.lastSuccess, m.suspended, m.clockHeld,
		m.groupHeld, m.groupTransitions, m.groupStoreErrs, m.sessionRenewal, info} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("batonprom: registering metrics: %w", err)
		}
	}
	for _, c := range causes {
		m.groupTransitions.WithLabelValues(c)
	}
	return m, nil
}

// renewBuckets are the buckets of the renewal latency histograms.
var renewBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// modulePath is baton's module path, looked up in the build info.
const modulePath = "github.com/batonhq/baton"

// buildInfo returns baton's module version as the program was built with
// it ("(devel)" for a build inside baton's own module without a tag,
// "unknown" without build info) and the Go version.
func buildInfo() (version, goversion string) {
	version = "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version, runtime.Version()
}

// Track exports every series of the election name at 0 (its leadership
// gauges, every cause of its transitions, its fence rejections and store
// errors), so that alerts and dashboards see the name before anything
// happened to it. An Elector with baton.WithObserver(m) tracks its name
// when it starts; call Track earlier (before the first campaign) or for a fenced
// resource of another name. Tracking a name twice does nothing.
func (m *Metrics) Track(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trackLocked(name)
}

// TrackJob is Track for a scheduled job: it also exports the job's
// period counters, one per state, at 0.
func (m *Metrics) TrackJob(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trackLocked(name)
	for _, s := range periodStates {
		m.periods.WithLabelValues(name, string(s))
	}
	m.clockHeld.WithLabelValues(name)
}

func (m *Metrics) trackLocked(name string) {
	if m.tracked[name] {
		return
	}
	m.tracked[name] = true
	m.leader.WithLabelValues(name)
	m.token.WithLabelValues(name)
	for _, c := range causes {
		m.transitions.WithLabelValues(name, c)
	}
	m.fence.WithLabelValues(name)
	m.storeErrs.WithLabelValues(name)
}

// GroupElected counts a term of a Group's name won (baton.Observer).
func (m *Metrics) GroupElected() {
	m.groupHeld.Inc()
	m.groupTransitions.WithLabelValues("elected").Inc()
}

// GroupLost counts a term of a Group's name ended, by cause
// (baton.Observer).
func (m *Metrics) GroupLost(cause error) {
	m.groupHeld.Dec()
	m.groupTransitions.WithLabelValues(causeLabel(cause)).Inc()
}

// GroupStoreError counts a failed store call of a Group (baton.Observer).
func (m *Metrics) GroupStoreError(error) { m.groupStoreErrs.Inc() }

// SessionRenewal records the latency of a Group's session renewal write
// (baton.Observer).
func (m *Metrics) SessionRenewal(latency time.Duration) {
	m.sessionRenewal.Observe(max(latency, 0).Seconds())
}

// fenceHelp is baton_fence_rejections_total's help: whose refusals it
// counts, and whose it does not.
const fenceHelp = "Run-ledger writes of this process refused because their fencing token was stale, plus the refusals the program reports itself (Metrics.FenceRejected). Under 'baton run' only the ledger's: refusals by the job's own fence (baton fence install or proxy, pgfence) are not counted here."

// FenceRejected counts one write for name refused by a fence because its
// token was stale. Job runners call it for the run ledger only; call it
// from your own fenced resource to see its refusals beside the elector's
// metrics (baton run cannot: a job's fence refuses in another process).
func (m *Metrics) FenceRejected(name string) { m.fence.WithLabelValues(name).Inc() }

// PeriodState counts a period of job moved to state by this process
// (the job's series carry the label "name").
func (m *Metrics) PeriodState(job string, state store.RunState) {
	m.periods.WithLabelValues(job, string(state)).Inc()
}

// RunStarted records the start delay of a run of job: its start minus the
// period's scheduled time.
func (m *Metrics) RunStarted(job string, delay time.Duration) {
	m.delay.WithLabelValues(job).Observe(max(delay, 0).Seconds())
}

// JobSuspended records whether job is suspended, as this process last
// read it.
func (m *Metrics) JobSuspended(job string, suspended bool) {
	v := 0.0
	if suspended {
		v = 1
	}
	m.suspended.WithLabelValues(job).Set(v)
}

// ClockHeld records whether the wall-clock guard holds this process off
// job (schedule.ClockObserver), or, after it gave its term up, whether it
// waits for its clock before campaigning (baton run).
func (m *Metrics) ClockHeld(job string, held bool, _ time.Duration) {
	v := 0.0
	if held {
		v = 1
	}
	m.clockHeld.WithLabelValues(job).Set(v)
}

// RunSucceeded records that a run of job finished done at t.
func (m *Metrics) RunSucceeded(job string, t time.Time) {
	m.lastSuccess.WithLabelValues(job).Set(float64(t.UnixNano()) / 1e9)
}

// Ready tells whether the Elector of name works normally: nil while it
// leads, or while it campaigns and the store answered its last call or has
// been failing for less than one lease. Otherwise it says why not: it was
// never started (or has stopped campaigning), or the store has been failing
// for a lease or longer (the node could neither lead nor take over).
// Ready reads now from the caller so that it follows the Elector's clock.
func (m *Metrics) Ready(name string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.names[name]
	switch {
	case s == nil || s.phase == "idle":
		return fmt.Errorf("%s: not campaigning", name)
	case s.phase == "leading":
		return nil
	case !s.failSince.IsZero() && now.Sub(s.failSince) >= s.lease:
		return fmt.Errorf("%s: campaigning, but the store has been failing for %v: %v",
			name, now.Sub(s.failSince).Round(time.Millisecond), s.lastErr)
	}
	return nil
}

// state returns name's state, creating it. m.mu must be held.
func (m *Metrics) state(name string) *nameState {
	s := m.names[name]
	if s == nil {
		s = &nameState{phase: "idle"}
		m.names[name] = s
		m.trackLocked(name)
	}
	return s
}

// Campaigning records that the Elector of name campaigns, with its lease
// (baton.Observer).
func (m *Metrics) Campaigning(name string, lease time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(name)
	s.lease = lease
	if s.phase == "idle" {
		s.phase = "campaigning"
	}
}

// Idle records that the Elector of name stopped campaigning
// (baton.Observer).
func (m *Metrics) Idle(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state(name).phase = "idle"
}

// StoreCall counts a failed store call of the Elector of name, and
// remembers since when the store has been failing, for Ready
// (baton.Observer).
func (m *Metrics) StoreCall(name string, at time.Time, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(name)
	if err == nil {
		s.failSince, s.lastErr = time.Time{}, nil
		return
	}
	m.storeErrs.WithLabelValues(name).Inc()
	if s.failSince.IsZero() {
		s.failSince = at
	}
	s.lastErr = err
}

// Elected records a term of name won with token (baton.Observer).
func (m *Metrics) Elected(name string, token uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state(name).phase = "leading"
	m.leader.WithLabelValues(name).Set(1)
	m.token.WithLabelValues(name).Set(float64(token))
	m.transitions.WithLabelValues(name, "elected").Inc()
}

// Renewal records the latency of a renewal write of name
// (baton.Observer).
func (m *Metrics) Renewal(name string, latency time.Duration) {
	m.renewal.WithLabelValues(name).Observe(latency.Seconds())
}

// Extended records the lease the term of name had left when a renewal
// succeeded (baton.Observer).
func (m *Metrics) Extended(name string, left time.Duration) {
	m.leaseLeft.WithLabelValues(name).Observe(max(left, 0).Seconds())
}

// Lost records the end of the term of name, by cause (baton.Observer).
func (m *Metrics) Lost(name string, cause error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state(name).phase = "campaigning"
	m.leader.WithLabelValues(name).Set(0)
	m.token.WithLabelValues(name).Set(0)
	m.transitions.WithLabelValues(name, causeLabel(cause)).Inc()
}

// causeLabel returns the label "cause" of a term ended by err.
func causeLabel(err error) string {
	switch {
	case errors.Is(err, baton.ErrLeaseExpired):
		return "lease-expired"
	case errors.Is(err, baton.ErrDeposed):
		return "deposed"
	case errors.Is(err, baton.ErrResigned):
		return "resigned"
	case errors.Is(err, baton.ErrStoreLost):
		return "store-lost"
	default:
		return "stopped"
	}
}
