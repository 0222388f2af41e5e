package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// benchNames is the sizes BenchmarkKubeBulk measures, from
// $KUBETEST_BENCH_NAMES (comma-separated; default 30; BENCHMARKS.md has
// 10,000).
func benchNames(b *testing.B) []int {
	raw := os.Getenv("KUBETEST_BENCH_NAMES")
	if raw == "" {
		raw = "30"
	}
	var out []int
	for _, f := range strings.Split(raw, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("KUBETEST_BENCH_NAMES=%q: want comma-separated counts of names", raw)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkKubeBulk measures on the API server what BENCHMARKS.md measures
// on the other stores: `baton bench hold --names N --lease 3s` (terms lost,
// the store calls a renewal makes, CPU) and `baton bench takeover --names N
// --lease 3s` (the last name taken over after a SIGKILL, over the floor
// lease + 2e), with the CLI built with -tags kube. Beside bench hold's own
// counts of store calls (a SwapMany is one call) it reports the Lease
// writes the API server served (its apiserver_request_total for leases,
// read before and after).
// $KUBETEST_HOLD sets the hold's --duration (default 30s),
// $KUBETEST_BENCH_LEASE the lease (default 3s, the other stores') and
// $KUBETEST_BENCH_QUERY more of the store URL's parameters (qps=500,
// session-hold=5m). A Group's renewal writes its session's Lease, and each
// name's Lease about every half session hold (store/kube, "Names held
// through a session"); acquiring or taking over N names takes about 2N
// requests at the client's qps.
//
//	cd kubetest && go test -run '^$' -bench KubeBulk -benchtime 1x -timeout 60m .
func BenchmarkKubeBulk(b *testing.B) {
	srv := StartServer(b)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		b.Fatal(err)
	}
	e := &env{srv: srv, cs: cs}
	defer e.close()
	cli := e.batonCLI(b)
	kc := e.kubeconfig(b)
	hold, lease, query := "30s", "3s", ""
	if v := os.Getenv("KUBETEST_BENCH_QUERY"); v != "" {
		query = "&" + v // more of the URL's parameters: qps=500&session-hold=5m
	}
	if v := os.Getenv("KUBETEST_HOLD"); v != "" {
		hold = v
	}
	if v := os.Getenv("KUBETEST_BENCH_LEASE"); v != "" {
		lease = v
	}
	for _, n := range benchNames(b) {
		b.Run(fmt.Sprintf("hold/names=%d", n), func(b *testing.B) {
			for range b.N {
				url := "kube://" + e.namespace(b) + "?kubeconfig=" + kc + query
				before := e.leaseRequests(b)
				began := time.Now()
				puts := e.samplePuts(b)
				out := runCLI(b, cli, "bench", "hold", "--store", url, "--names", strconv.Itoa(n), "--lease", lease,
					"--duration", hold, "--timeout", "10m", "--json")
				samples := puts()
				after := e.leaseRequests(b)
				var rep struct {
					Held           int     `json:"held"`
					AcquireSeconds float64 `json:"acquireSeconds"`
					Duration       float64 `json:"durationSeconds"`
					RenewSeconds   float64 `json:"renewSeconds"`
					TermsLost      uint64  `json:"termsLost"`
					WritesPerRenew float64 `json:"writesPerRenew"`
					CPUPercent     float64 `json:"cpuPercent"`
				}
				if err := json.Unmarshal(out, &rep); err != nil {
					b.Fatalf("bench hold's report: %v\n%s", err, out)
				}
				// The Lease updates of the hold alone: the counter sampled
				// every second, from 5 s after the acquisition to 5 s
				// before the release (none for a hold of 10 s or less).
				from := began.Add(time.Duration((rep.AcquireSeconds + 5) * float64(time.Second)))
				to := from.Add(time.Duration((rep.Duration - 10) * float64(time.Second)))
				holdPuts, holdSecs := putsBetween(samples, from, to)
				perRenew := 0.0
				if holdSecs > 0 && rep.RenewSeconds > 0 {
					perRenew = holdPuts / (holdSecs / rep.RenewSeconds)
					b.ReportMetric(perRenew, "lease-updates/renew")
				}
				allPuts := after["PUT"] - before["PUT"]
				b.ReportMetric(float64(rep.TermsLost), "terms-lost")
				b.ReportMetric(rep.WritesPerRenew, "store-calls/renew")
				b.ReportMetric(rep.CPUPercent, "cpu-%")
				b.ReportMetric(rep.AcquireSeconds, "acquire-s")
				b.Logf("%d names, lease %s, held %d for %.0f s after %.3f s of acquisition: %d terms lost, %.3f store write calls a renew interval, %.2f%% CPU; the API server served %.0f Lease updates in %.0f s of the hold (%.2f a renew interval), and %.0f updates (PUT) and %.0f creates (POST) over the whole run (acquisition, hold, release)",
					n, lease, rep.Held, rep.Duration, rep.AcquireSeconds, rep.TermsLost, rep.WritesPerRenew, rep.CPUPercent, holdPuts, holdSecs, perRenew, allPuts, after["POST"]-before["POST"])
			}
		})
		b.Run(fmt.Sprintf("takeover/names=%d", n), func(b *testing.B) {
			for range b.N {
				url := "kube://" + e.namespace(b) + "?kubeconfig=" + kc + query
				out := runCLI(b, cli, "bench", "takeover", "--store", url, "--names", strconv.Itoa(n), "--lease", lease, "--json")
				var rep takeoverReport
				if err := json.Unmarshal(out, &rep); err != nil {
					b.Fatalf("bench takeover's report: %v\n%s", err, out)
				}
				if rep.DoubleHeld != 0 || rep.TakenOver != n {
					b.Errorf("bench takeover: %d names held twice, %d taken over; want 0 and %d\n%s", rep.DoubleHeld, rep.TakenOver, n, out)
				}
				b.ReportMetric(rep.OverFloorSeconds, "last-over-floor-s")
				b.ReportMetric(rep.FirstTakeoverSeconds-rep.FloorSeconds, "first-over-floor-s")
				b.ReportMetric(float64(rep.DoubleHeld), "double-held")
				b.Logf("%d names, lease %s: floor %.3f s, first name %.3f s, last %.3f s after the holder's last renewal (+%.3f s); %d taken over, %d held twice",
					n, lease, rep.FloorSeconds, rep.FirstTakeoverSeconds, rep.LastTakeoverSeconds, rep.OverFloorSeconds, rep.TakenOver, rep.DoubleHeld)
			}
		})
	}
}

// runCLI runs the CLI and returns its standard output; a failure ends the
// benchmark with both outputs.
func runCLI(b *testing.B, cli string, args ...string) []byte {
	b.Helper()
	cmd := exec.Command(cli, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("baton %s: %v\n%s%s", strings.Join(args[:2], " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// putSample is the API server's count of Lease updates at a time.
type putSample struct {
	at   time.Time
	puts float64
}

// samplePuts reads the API server's count of Lease updates every second
// until the function it returns is called, which returns the samples.
func (e *env) samplePuts(b testing.TB) func() []putSample {
	var mu sync.Mutex
	var out []putSample
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if r, err := e.readLeaseRequests(); err == nil {
				mu.Lock()
				out = append(out, putSample{at: time.Now(), puts: r["PUT"]})
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []putSample {
		close(stop)
		<-done
		return out
	}
}

// putsBetween returns the Lease updates between the first sample at or
// after from and the last at or before to, and the seconds between them.
func putsBetween(samples []putSample, from, to time.Time) (puts, secs float64) {
	var first, last *putSample
	for i := range samples {
		if first == nil && !samples[i].at.Before(from) {
			first = &samples[i]
		}
		if !samples[i].at.After(to) {
			last = &samples[i]
		}
	}
	if first == nil || last == nil || !last.at.After(first.at) {
		return 0, 0
	}
	return last.puts - first.puts, last.at.Sub(first.at).Seconds()
}

// leaseRequests reads the API server's apiserver_request_total for the
// resource leases, summed by verb (PUT, POST, GET, LIST, WATCH).
func (e *env) leaseRequests(b testing.TB) map[string]float64 {
	b.Helper()
	out, err := e.readLeaseRequests()
	if err != nil {
		b.Fatalf("reading the API server's /metrics: %v", err)
	}
	return out
}

func (e *env) readLeaseRequests() (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="leases"`) {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(labels, ",") {
			if k, val, _ := strings.Cut(l, "="); k == "verb" {
				out[strings.Trim(val, `"`)] += v
			}
		}
	}
	return out, nil
}
