//go:build !nolab

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store/storeurl"
)

const benchHoldSynopsis = `bench hold [--store URL] [--names N] [--lease D] [--duration D] [--metrics-addr ADDR] [--json]

One process acquires N names through one baton.Group (Hold) and, once it
holds every one, holds them for --duration. Then it prints, for the hold
(acquisition excluded):

  termsLost             terms that ended other than by a resign (0 unless the
                        store or the machine could not keep up)
  storeWritesPerSec     write calls that reached the store, per second: a
                        SwapMany of 1,000 records is one call. The goal is
                        one per renew interval (writesPerRenew 1), whatever N
  recordsWrittenPerSec  election records those calls wrote, per second
  storeReadsPerSec      read calls (Get, GetMany, ...), per second: a holder
                        re-reads each held name in batches, once every four
                        leases (once a lease without a live change feed), and
                        at most 1,000 names a second whatever N
  cpuPercent            user + system CPU of this process / wall time, in %
                        of one core
  rssBytes              resident memory at the end (rssPeakBytes: the peak)
  goroutines            goroutines at the end
  acquireSeconds        from the first campaign to holding every name

The calls are counted by a wrapper around the store that forwards every
optional capability the backend has, so the library takes the same paths
as without it. At the end the Group is closed: one write frees every name.`

// holdReport is what 'bench hold' prints.
type holdReport struct {
	Store                string  `json:"store"`
	Names                int     `json:"names"`
	LeaseSeconds         float64 `json:"leaseSeconds"`
	RenewSeconds         float64 `json:"renewSeconds"`
	DurationSeconds      float64 `json:"durationSeconds"`
	AcquireSeconds       float64 `json:"acquireSeconds"`
	Held                 int     `json:"held"`
	TermsLost            uint64  `json:"termsLost"`
	StoreWrites          int64   `json:"storeWrites"`
	StoreWritesPerSec    float64 `json:"storeWritesPerSec"`
	WritesPerRenew       float64 `json:"writesPerRenew"`
	RecordsWrittenPerSec float64 `json:"recordsWrittenPerSec"`
	StoreReadsPerSec     float64 `json:"storeReadsPerSec"`
	RecordsReadPerSec    float64 `json:"recordsReadPerSec"`
	CPUPercent           float64 `json:"cpuPercent"`
	RSSBytes             int64   `json:"rssBytes"`
	RSSPeakBytes         int64   `json:"rssPeakBytes"`
	Goroutines           int     `json:"goroutines"`
}

func runBenchHold(ctx context.Context, e *env, args []string) int {
	const name = "bench hold"
	fs := e.newFlagSet(name, benchHoldSynopsis)
	var b benchFlags
	b.register(fs, 1000)
	duration := fs.Duration("duration", time.Minute, "how long to hold the names once every one is held")
	metricsAddr := fs.String("metrics-addr", "", "serve the Group's /metrics (aggregates, not a series per name), /healthz and /readyz on this address (empty: off)")
	return e.runBenchmark(name, fs, &b, args, func() error {
		if *duration <= 0 {
			return usagef("invalid --duration %v; want a positive duration", *duration)
		}
		return nil
	}, func(opts []baton.Option) (benchReport, int, error) {
		rep, err := benchHold(ctx, e, &b, *duration, *metricsAddr, opts)
		return rep, 0, err
	})
}

// benchHold runs 'bench hold'.
func benchHold(ctx context.Context, e *env, b *benchFlags, duration time.Duration, metricsAddr string, opts []baton.Option) (holdReport, error) {
	url, err := resolveStoreURL(*b.storeURL)
	if err != nil {
		return holdReport{}, err
	}
	logger := b.logs.logger(e.stderr) // one handler: its lock orders every line
	ops, err := startMetrics(metricsAddr, "", false, logger)
	if err != nil {
		return holdReport{}, err
	}
	defer ops.close()
	opts = append(opts, ops.electorOptions()...)
	raw, err := e.openStore(ctx, url)
	if err != nil {
		return holdReport{}, err
	}
	defer raw.Close()
	var counts storeCounts
	g, err := baton.NewGroup(countStore(raw, &counts), append(opts, baton.WithLogger(logger))...)
	if err != nil {
		return holdReport{}, asUsage(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), b.lease)
		defer cancel()
		g.Close(cctx)
	}()

	names := benchNames(b.prefix, b.names)
	var won atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	began := time.Now()
	// Held until Close, which frees every name with one write; a Hold
	// ended by its context would resign them one by one.
	err = g.Hold(context.Background(), names, func(*baton.Term) {
		if won.Add(1) == int64(len(names)) {
			once.Do(func() { close(all) })
		}
	})
	if err != nil {
		return holdReport{}, err
	}
	timeout := time.NewTimer(b.timeout)
	defer timeout.Stop()
	select {
	case <-all:
	case <-timeout.C:
		return holdReport{}, fmt.Errorf("acquired %d of %d names in --timeout %v; give it longer, or use fewer names", g.Stats().Held, len(names), b.timeout)
	case <-ctx.Done():
		return holdReport{}, fmt.Errorf("interrupted while acquiring (%d of %d names held)", g.Stats().Held, len(names))
	}
	acquired := time.Now()

	c0, cpu0 := counts.snapshot(), cpuTime()
	hold := time.NewTimer(duration)
	defer hold.Stop()
	select {
	case <-hold.C:
	case <-ctx.Done():
		return holdReport{}, errors.New("interrupted while holding")
	}
	wall := time.Since(acquired)
	c, cpu := counts.snapshot().sub(c0), cpuTime()-cpu0
	st := g.Stats()
	rss, peak := memory()
	per := func(n int64) float64 { return round3(float64(n) / wall.Seconds()) }
	renew := b.effectiveRenew()
	return holdReport{
		Store:                storeurl.Redact(url),
		Names:                len(names),
		LeaseSeconds:         bound.Seconds(b.lease),
		RenewSeconds:         bound.Seconds(renew),
		DurationSeconds:      seconds(wall),
		AcquireSeconds:       seconds(acquired.Sub(began)),
		Held:                 st.Held,
		TermsLost:            st.Lost,
		StoreWrites:          c.writeCalls,
		StoreWritesPerSec:    per(c.writeCalls),
		WritesPerRenew:       round3(float64(c.writeCalls) / wall.Seconds() * renew.Seconds()),
		RecordsWrittenPerSec: per(c.recordsWritten),
		StoreReadsPerSec:     per(c.readCalls),
		RecordsReadPerSec:    per(c.recordsRead),
		CPUPercent:           round3(100 * cpu.Seconds() / wall.Seconds()),
		RSSBytes:             rss,
		RSSPeakBytes:         peak,
		Goroutines:           runtime.NumGoroutine(),
	}, nil
}

func (r holdReport) print(w io.Writer) {
	fmt.Fprintf(w, "baton bench hold: %d names on %s, lease %v, renew %v, held %.1fs\n", r.Names, r.Store,
		durSec(r.LeaseSeconds), durSec(r.RenewSeconds), r.DurationSeconds)
	io.WriteString(w, table([][2]string{
		{"acquire", fmt.Sprintf("%.3f s", r.AcquireSeconds)},
		{"held at the end", fmt.Sprintf("%d of %d", r.Held, r.Names)},
		{"terms lost", fmt.Sprint(r.TermsLost)},
		{"store writes", fmt.Sprintf("%.2f calls/s (%.2f per renew interval, %d in all)", r.StoreWritesPerSec, r.WritesPerRenew, r.StoreWrites)},
		{"records written", fmt.Sprintf("%.2f /s", r.RecordsWrittenPerSec)},
		{"store reads", fmt.Sprintf("%.2f calls/s, %.1f records/s", r.StoreReadsPerSec, r.RecordsReadPerSec)},
		{"cpu", fmt.Sprintf("%.1f %% of one core", r.CPUPercent)},
		{"rss", fmt.Sprintf("%s (peak %s)", mib(r.RSSBytes), mib(r.RSSPeakBytes))},
		{"goroutines", fmt.Sprint(r.Goroutines)},
	}))
}
