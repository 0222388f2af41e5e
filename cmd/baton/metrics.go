package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonprom"
	"github.com/batonhq/baton/schedule"
)

const metricsAddrUsage = `serve /metrics (Prometheus), /healthz and /readyz on this address, e.g. 127.0.0.1:9090 (empty: off).
/healthz answers 200 while the process serves requests. /readyz answers 200 while
this node leads JOB, or campaigns for it with the store answering; 503 with the
reason when it does not campaign (starting, stopping) or the store has been failing
for a lease or longer`

// addMetricsFlag adds --metrics-addr to fs.
func addMetricsFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics-addr", "", metricsAddrUsage)
}

// opsServer serves a process's metrics and health endpoints.
type opsServer struct {
	metrics *batonprom.Metrics
	srv     *http.Server
	done    chan struct{}
}

// startMetrics listens on addr and serves /metrics, /healthz and /readyz
// for the election name (a job's when job is true), whose series it
// exports at 0 at once. With name empty (a Group) /readyz answers 200
// while the process serves. With addr empty it returns nil, nil: no
// metrics. A nil *opsServer is valid and does nothing.
func startMetrics(addr, name string, job bool, logger *slog.Logger) (*opsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := batonprom.New(reg)
	if err != nil {
		return nil, err
	}
	switch {
	case name == "":
	case job:
		m.TrackJob(name)
	default:
		m.Track(name)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("invalid --metrics-addr %q: %v; want a free HOST:PORT such as 127.0.0.1:9090", addr, errors.Unwrap(err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if name == "" {
			fmt.Fprintln(w, "ready")
			return
		}
		if err := m.Ready(name, time.Now()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	s := &opsServer{metrics: m, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("metrics server stopped", "err", err)
		}
	}()
	logger.Info("serving metrics", "addr", ln.Addr().String())
	return s, nil
}

// runnerOptions returns the options that make a job Runner report to s.
func (s *opsServer) runnerOptions() []schedule.Option {
	if s == nil {
		return nil
	}
	return []schedule.Option{schedule.WithObserver(s.metrics)}
}

// jobSuspended reports a job's suspension to the metrics, if any.
func (s *opsServer) jobSuspended(job string, suspended bool) {
	if s != nil {
		s.metrics.JobSuspended(job, suspended)
	}
}

// clockHeld reports to the metrics, if any, that this node waits for its
// clock before campaigning again (it gave its term up: --clock-step-down).
func (s *opsServer) clockHeld(job string, held bool) {
	if s != nil {
		s.metrics.ClockHeld(job, held, 0)
	}
}

// electorOptions returns the options that make an Elector report to s.
func (s *opsServer) electorOptions() []baton.Option {
	if s == nil {
		return nil
	}
	return []baton.Option{baton.WithObserver(s.metrics)}
}

// close stops the server, waiting briefly for requests in flight.
func (s *opsServer) close() {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	<-s.done
}
