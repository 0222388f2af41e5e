package baton

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// Metrics records what Electors and job runners do as Prometheus metrics,
// in a registry the caller passes in: the library keeps no global state and
// registers nothing by itself. One Metrics serves any number of Electors
// (one per name) and job runners; pass it to each with WithMetrics, and to
// schedule.WithObserver for jobs.
//
// Per election name (label "name"):
//
//	baton_leader                          1 while this process holds a term, else 0
//	baton_token                           the fencing token of the term it holds, 0 when not leading
//	baton_transitions_total{cause}        terms won (cause "elected") and ended ("lease-expired",
//	                                      "deposed", "resigned", "store-lost", "stopped")
//	baton_renewal_duration_seconds        latency of each renewal write, sent to answered (histogram)
//	baton_lease_remaining_seconds         lease time the term had left when a renewal succeeded,
//	                                      before the renewal moved the deadline (histogram)
//	baton_fence_rejections_total          writes refused because their token was stale
//	baton_store_errors_total              store calls that failed (conflicts are answers, not errors)
//
// Per job (label "job"):
//
//	baton_job_periods_total{state}        periods this process moved to a state: running, done,
//	                                      failed, skipped, pending
//	baton_job_start_delay_seconds         scheduled time to start of each run (histogram)
//	baton_job_last_success_timestamp_seconds  Unix time the last run finished done
//	baton_job_suspended                   1 while the job is suspended ('baton suspend') as this
//	                                      process last read it, else 0
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

	mu    sync.Mutex
	names map[string]*nameState
}

// nameState is what Ready needs to know of one Elector, and what the
// renewal histograms need between a write and its answer.
type nameState struct {
	phase     string        // "idle", "campaigning", "leading"
	lease     time.Duration // the Elector's lease
	deadline  time.Time     // the held term's deadline
	renewSent time.Time     // a renewal in flight since (zero: none)
	failSince time.Time     // first store failure of the current run of failures (zero: last call answered)
	lastErr   error
}

// NewMetrics creates baton's metrics and registers them with reg. It fails
// if reg already holds metrics of the same names (one Metrics per registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("baton: metrics registry must not be nil")
	}
	name := []string{"name"}
	job := []string{"job"}
	m := &Metrics{
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_leader",
			Help: "1 while this process holds a term of the name, else 0."}, name),
		token: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_token",
			Help: "The fencing token of the term this process holds, 0 when it does not lead."}, name),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_transitions_total",
			Help: "Leadership transitions of this process by cause: elected, lease-expired, deposed, resigned, store-lost, stopped."}, []string{"name", "cause"}),
		renewal: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_renewal_duration_seconds",
			Help:    "Latency of the leader's renewal writes, from sending to the store's answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15)}, name),
		leaseLeft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_lease_remaining_seconds",
			Help:    "Lease time the term had left when a renewal succeeded (before the renewal extended it).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60}}, name),
		fence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_fence_rejections_total",
			Help: "Writes refused because their fencing token was stale."}, name),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_store_errors_total",
			Help: "Store calls of the elector that failed (a compare-and-swap conflict is an answer, not an error)."}, name),
		periods: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "baton_job_periods_total",
			Help: "Periods this process moved to a state: pending, running, done, failed, skipped."}, []string{"job", "state"}),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "baton_job_start_delay_seconds",
			Help:    "Delay from a period's scheduled time to the start of its run.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600, 24 * 3600}}, job),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_job_last_success_timestamp_seconds",
			Help: "Unix time at which the job's last successful run finished."}, job),
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "baton_job_suspended",
			Help: "1 while the job is suspended (baton suspend) as this process last read it, else 0."}, job),
		names: map[string]*nameState{},
	}
	for _, c := range []prometheus.Collector{m.leader, m.token, m.transitions, m.renewal, m.leaseLeft,
		m.fence, m.storeErrs, m.periods, m.delay, m.lastSuccess, m.suspended} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("baton: registering metrics: %w", err)
		}
	}
	return m, nil
}

// WithMetrics makes the Elector record its leadership, renewals and store
// errors in m (default: no metrics).
func WithMetrics(m *Metrics) Option { return func(c *config) { c.metrics = m } }

// FenceRejected counts one write for name refused by a fence because its
// token was stale. Job runners call it for the ledger; call it from your own
// fenced resource to see its refusals beside the elector's metrics.
func (m *Metrics) FenceRejected(name string) { m.fence.WithLabelValues(name).Inc() }

// PeriodState counts a period of job moved to state by this process.
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
func (m *Metrics) state(name string, lease time.Duration) *nameState {
	s := m.names[name]
	if s == nil {
		s = &nameState{phase: "idle"}
		m.names[name] = s
		m.leader.WithLabelValues(name).Set(0)
		m.token.WithLabelValues(name).Set(0)
	}
	s.lease = lease
	return s
}

// step observes one step of an Elector's machine: the event it was fed at
// now, the actions it answered, and its state afterwards.
func (m *Metrics) step(name string, lease time.Duration, mach *election.Machine, now time.Time, ev election.Event, acts []election.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(name, lease)
	var replyErr error
	replied := false
	switch ev := ev.(type) {
	case election.Start:
		if s.phase == "idle" {
			s.phase = "campaigning"
		}
	case election.GetReply:
		replied, replyErr = true, ev.Err
		if errors.Is(replyErr, store.ErrNotFound) {
			replyErr = nil
		}
	case election.SwapReply:
		replied, replyErr = true, ev.Err
		if errors.Is(replyErr, store.ErrConflict) {
			replyErr = nil
		}
		if !s.renewSent.IsZero() {
			m.renewal.WithLabelValues(name).Observe(now.Sub(s.renewSent).Seconds())
			s.renewSent = time.Time{}
		}
	}
	if replied {
		if replyErr != nil {
			m.storeErrs.WithLabelValues(name).Inc()
			if s.failSince.IsZero() {
				s.failSince = now
			}
			s.lastErr = replyErr
		} else {
			s.failSince, s.lastErr = time.Time{}, nil
		}
	}
	for _, a := range acts {
		switch a := a.(type) {
		case election.Elected:
			s.phase, s.deadline = "leading", a.Deadline
			m.leader.WithLabelValues(name).Set(1)
			m.token.WithLabelValues(name).Set(float64(a.Token))
			m.transitions.WithLabelValues(name, "elected").Inc()
		case election.Extended:
			m.leaseLeft.WithLabelValues(name).Observe(max(s.deadline.Sub(now), 0).Seconds())
			s.deadline = a.Deadline
		case election.Swap:
			if mach.Leading() { // a renewal; an acquisition or release is sent while not leading
				s.renewSent = now
			}
		case election.Lost:
			s.phase = "campaigning"
			m.leader.WithLabelValues(name).Set(0)
			m.token.WithLabelValues(name).Set(0)
			m.transitions.WithLabelValues(name, causeLabel(a.Cause)).Inc()
		case election.Idle:
			s.phase = "idle"
		}
	}
}

func causeLabel(err error) string {
	switch {
	case errors.Is(err, election.ErrLeaseExpired):
		return "lease-expired"
	case errors.Is(err, election.ErrDeposed):
		return "deposed"
	case errors.Is(err, election.ErrResigned):
		return "resigned"
	case errors.Is(err, election.ErrStoreLost):
		return "store-lost"
	default:
		return "stopped"
	}
}
