//go:build !nolab

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton/store/storeurl"
)

const benchIdleSynopsis = `bench idle [FLAGS]

Measures what idle nodes cost: starts --nodes 'baton run --every 1h'
processes of one job on the store (one leads, the others wait; no period
is due after the first), lets them settle for --warmup, and then reads
each process's CPU time, wake-ups and memory from /proc at the start and
the end of --window. It prints, per process, the share of one core it
used (user + system), its voluntary context switches a second (its
threads' wake-ups), and its RSS, PSS and private memory at the end,
beside the load average before and after. Linux only (/proc).

The processes get the store URL in their environment (BATON_STORE), not
on their command line. Use a job name no other process uses.`

// benchIdleReport is the result of 'bench idle'.
type benchIdleReport struct {
	Store         string             `json:"store"`
	Job           string             `json:"job"`
	Program       string             `json:"program"`
	WindowSeconds float64            `json:"window_seconds"`
	LoadBefore    string             `json:"load_before"`
	LoadAfter     string             `json:"load_after"`
	Processes     []benchIdleProcess `json:"processes"`
}

// benchIdleProcess is one node's figures over the window.
type benchIdleProcess struct {
	Node         string  `json:"node"`
	Leader       bool    `json:"leader"`
	CPUPercent   float64 `json:"cpu_percent"`   // of one core
	WakeupsPerS  float64 `json:"wakeups_per_s"` // voluntary context switches, all threads
	RSSBytes     int64   `json:"rss_bytes"`     // at the end
	PSSBytes     int64   `json:"pss_bytes"`     // at the end; shared pages divided among their users
	PrivateBytes int64   `json:"private_bytes"` // at the end; pages of this process only
	Threads      int     `json:"threads"`       // at the end
}

func (r benchIdleReport) print(w io.Writer) {
	fmt.Fprintf(w, "store %s, job %s, %s, window %.0fs, load average before %s, after %s\n",
		r.Store, r.Job, r.Program, r.WindowSeconds, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "%-10s %-8s %8s %10s %10s %10s %10s %8s\n", "node", "role", "cpu", "wakeups/s", "rss", "pss", "private", "threads")
	for _, p := range r.Processes {
		role := "follower"
		if p.Leader {
			role = "leader"
		}
		fmt.Fprintf(w, "%-10s %-8s %7.3f%% %10.1f %10s %10s %10s %8d\n", p.Node, role, p.CPUPercent, p.WakeupsPerS,
			mib(p.RSSBytes), mib(p.PSSBytes), mib(p.PrivateBytes), p.Threads)
	}
}

// runBenchIdle implements 'baton bench idle'.
func runBenchIdle(ctx context.Context, e *env, args []string) int {
	const name = "bench idle"
	fs := e.newFlagSet(name, benchIdleSynopsis)
	storeURL := storeFlag(fs)
	nodes := fs.Int("nodes", 2, "number of 'baton run' processes")
	job := fs.String("job", "bench-idle", "the job they run")
	warmup := fs.Duration("warmup", 20*time.Second, "how long they settle before the window")
	window := fs.Duration("window", 10*time.Minute, "how long they are measured")
	program := fs.String("program", "", "the baton binary to start (default this one): to measure another build")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	if done, code := e.parse(fs, args); done {
		return code
	}
	if err := noArgs(fs); err != nil {
		return e.fail(name, err)
	}
	switch {
	case *nodes < 1 || *nodes > 100:
		return e.fail(name, usagef("invalid --nodes %d; want 1 to 100", *nodes))
	case *warmup < 0:
		return e.fail(name, usagef("invalid --warmup %v; want 0 or more", *warmup))
	case *window < time.Second:
		return e.fail(name, usagef("invalid --window %v; want 1s or more", *window))
	}
	if err := checkName("--job", *job); err != nil {
		return e.fail(name, err)
	}
	url, err := resolveStoreURL(*storeURL)
	if err != nil {
		return e.fail(name, err)
	}
	if isInProcess(url) {
		return e.fail(name, usagef("--store %s is in-process: the nodes would not share it; use a store processes share (sqlite:PATH, postgres://..., etcd://...)", url))
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return e.fail(name, fmt.Errorf("no /proc here: 'bench idle' measures from /proc, on Linux only"))
	}
	self := *program
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return e.fail(name, fmt.Errorf("cannot find this program to start the nodes: %w", err))
		}
	}
	rep := benchIdleReport{Store: storeurl.Redact(url), Job: *job, Program: filepath.Base(self)}
	procs := make([]*exec.Cmd, *nodes)
	logs := make([]*tail, *nodes)
	defer func() {
		for _, p := range procs {
			if p != nil && p.Process != nil {
				p.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, p := range procs {
			if p != nil && p.Process != nil {
				p.Wait()
			}
		}
	}()
	for i := range procs {
		node := fmt.Sprintf("idle-%d", i+1)
		c := exec.Command(self, "run", "--every", "1h", "--node", node, "--log-level", "info", "--log-format", "text", *job, "--", "true")
		c.Env = append(os.Environ(), "BATON_STORE="+url, "BATON_STORE_FILE=")
		logs[i] = &tail{}
		c.Stderr = logs[i]
		if err := c.Start(); err != nil {
			return e.fail(name, fmt.Errorf("cannot start node %s: %w", node, err))
		}
		procs[i] = c
		rep.Processes = append(rep.Processes, benchIdleProcess{Node: node})
	}
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	if err := sleep(*warmup); err != nil {
		return e.fail(name, err)
	}
	rep.LoadBefore = loadAverage()
	start := make([]procSample, len(procs))
	for i, p := range procs {
		if start[i], err = sampleProc(p.Process.Pid); err != nil {
			return e.fail(name, fmt.Errorf("node %s ended before the window: %s", rep.Processes[i].Node, lastLine(logs[i])))
		}
	}
	t0 := time.Now()
	if err := sleep(*window); err != nil {
		return e.fail(name, err)
	}
	elapsed := time.Since(t0)
	rep.LoadAfter = loadAverage()
	rep.WindowSeconds = round3(elapsed.Seconds())
	for i, p := range procs {
		end, err := sampleProc(p.Process.Pid)
		if err != nil {
			return e.fail(name, fmt.Errorf("node %s ended in the window: %s", rep.Processes[i].Node, lastLine(logs[i])))
		}
		r := &rep.Processes[i]
		r.CPUPercent = round3(100 * float64(end.cpu-start[i].cpu) / float64(elapsed))
		r.WakeupsPerS = round3(float64(end.switches-start[i].switches) / elapsed.Seconds())
		r.RSSBytes, r.PSSBytes, r.PrivateBytes, r.Threads = end.rss, end.pss, end.private, end.threads
		r.Leader = strings.Contains(logs[i].String(), "msg=elected")
	}
	return e.report(name, *asJSON, rep, 0)
}

// procSample is what /proc tells of a process at one moment.
type procSample struct {
	cpu               time.Duration // user + system, its own threads (not its children)
	switches          int64         // voluntary context switches of all its threads
	rss, pss, private int64
	threads           int
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux architecture.
const userHZ = 100

// sampleProc reads pid's CPU time, wake-ups and memory from /proc.
func sampleProc(pid int) (procSample, error) {
	var s procSample
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return s, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// follow the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 || f[0] == "Z" {
		return s, fmt.Errorf("process %d has ended", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(ut+st) * time.Second / userHZ
	tasks, _ := filepath.Glob(dir + "/task/*/status")
	s.threads = len(tasks)
	for _, t := range tasks {
		s.switches += statusField(t, "voluntary_ctxt_switches")
	}
	s.rss = statusField(dir+"/status", "VmRSS") << 10
	s.pss = statusField(dir+"/smaps_rollup", "Pss") << 10
	s.private = (statusField(dir+"/smaps_rollup", "Private_Clean") + statusField(dir+"/smaps_rollup", "Private_Dirty")) << 10
	return s, nil
}

// statusField returns the number after "key:" in a /proc file of such
// lines (status, smaps_rollup), or 0.
func statusField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		return n
	}
	return 0
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "n/a".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// lastLine returns the last line a node logged, or "no message".
func lastLine(t *tail) string {
	msg := strings.TrimSpace(t.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	if msg == "" {
		return "no message"
	}
	return msg
}
