package drill

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// proc is one node process, across its incarnations.
type proc struct {
	idx   int
	id    string
	inc   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// Under procDrill.mu: the node has stopped itself (pause, or armed
	// before a write) and whether the fault is over, so that it gets
	// SIGCONT as soon as both are true.
	stopped, release bool
	// Under procDrill.mu, with Config.ThawAfterRetake: the period and
	// token the node froze on before its write, whether another node has
	// written that period under a newer token since, and whether the node
	// was let go and has not yet reported its own write's outcome.
	frozeOn   string
	frozeTok  uint64
	retaken   bool
	owesWrite bool
	// disarmOnFreeze (Config.ThawAfterRetake, under procDrill.mu): the
	// fault's end came before the node reached a write, so it stays armed
	// until it freezes before one, and is disarmed and released then.
	disarmOnFreeze bool
}

// procEvent is one line of a node's report, or something the drill did to
// a node (killed, continued).
type procEvent struct {
	node int
	at   time.Time
	verb string
	args []string
}

func (e procEvent) token() uint64 {
	if len(e.args) == 0 {
		return 0
	}
	v, _ := strconv.ParseUint(e.args[0], 10, 64)
	return v
}

func (e procEvent) until() time.Time {
	if len(e.args) < 2 {
		return time.Time{}
	}
	v, _ := strconv.ParseInt(e.args[1], 10, 64)
	return time.Unix(0, v)
}

// start starts a new incarnation of pr.
func (d *procDrill) start(pr *proc) error {
	pr.inc++
	p := d.p
	args := append(slices.Clone(d.cfg.Node[1:]),
		"--store", d.storePath, "--job", d.job, "--resource", d.resPath, "--node", pr.id, "--column", string(d.col),
		"--lease", (time.Duration(p.Lease) * p.Round).String(), "--renew", (time.Duration(p.Renew) * p.Round).String(),
		"--clock-margin", p.Margin.String(), "--poll", p.poll().String(), "--round", p.Round.String(),
		"--invoice-lines", strconv.Itoa(p.InvoiceLines))
	if d.net != nil {
		args = append(args, "--history", filepath.Join(d.dir, fmt.Sprintf("%s.%s.%d.history", d.name, pr.id, pr.inc)))
		if d.cfg.UnsafeNoFence {
			args = append(args, "--unsafe-no-fence")
		}
	}
	cmd := exec.Command(d.cfg.Node[0], args...)
	if d.net != nil {
		cmd = d.net.Command(pr.idx, d.cfg.Node[0], args...)
	}
	cmd.Env = append(os.Environ(), d.cfg.NodeEnv...)
	log, err := os.Create(filepath.Join(d.dir, fmt.Sprintf("%s.%s.%d.log", d.name, pr.id, pr.inc)))
	if err != nil {
		return err
	}
	cmd.Stderr = log
	defer log.Close() // the child has its own copy
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := cmd.Start
	if d.net != nil {
		start = func() error { return d.net.Start(cmd) }
	}
	if err := start(); err != nil {
		return fmt.Errorf("drill: starting node %s: %w", pr.id, err)
	}
	pr.cmd, pr.stdin = cmd, stdin
	d.mu.Lock()
	pr.stopped, pr.release = false, false
	pr.frozeOn, pr.frozeTok, pr.retaken, pr.owesWrite = "", 0, false, false
	d.mu.Unlock()
	d.readers.Add(1)
	go d.read(pr, stdout)
	return nil
}

// read parses a node's report lines until its stdout closes.
func (d *procDrill) read(pr *proc, stdout io.Reader) {
	defer d.readers.Done()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		ev := procEvent{node: pr.idx, at: time.Unix(0, ns), verb: f[1], args: f[2:]}
		d.mu.Lock()
		d.events = append(d.events, ev)
		switch ev.verb {
		case "ready":
			if pr.inc == 1 {
				d.ready++
			}
		case "paused", "freezing":
			pr.stopped = true
			if ev.verb == "freezing" && len(ev.args) == 2 {
				pr.frozeOn, pr.frozeTok = ev.args[0], argUint(ev.args[1])
				if pr.disarmOnFreeze {
					pr.disarmOnFreeze, pr.release = false, true
					d.send(pr, "disarm") // read once it is let go
				}
			}
			d.contIfDue(pr)
		case "wrote":
			// ThawAfterRetake: another node's write of the period a node
			// froze on, under a newer token, lets that node go on.
			if len(ev.args) == 2 {
				for _, q := range d.procs {
					if q != pr && q.frozeOn == ev.args[0] && argUint(ev.args[1]) > q.frozeTok {
						q.retaken = true
						d.contIfDue(q)
					}
				}
			}
			pr.owesWrite = false
		case "rejected":
			if len(ev.args) > 0 && ev.args[0] == "write" {
				pr.owesWrite = false
			}
		case "error":
			d.failed = fmt.Errorf("drill: node %s: %s", pr.id, strings.Join(ev.args, " "))
		case "ledger":
			if len(ev.args) == 2 {
				if d.ledger == nil {
					d.ledger = map[string]string{}
				}
				d.ledger[ev.args[0]] = ev.args[1]
			}
		}
		d.mu.Unlock()
	}
}

// argUint parses a token of a report line (0 when it is not a number).
func argUint(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

// contIfDue resumes pr if it is stopped and its fault is over, and, with
// Config.ThawAfterRetake, a node frozen before its write only once
// another node has written that period under a newer token. d.mu is
// held.
func (d *procDrill) contIfDue(pr *proc) {
	if !pr.stopped || !pr.release {
		return
	}
	if d.cfg.ThawAfterRetake && pr.frozeOn != "" {
		if !pr.retaken {
			return
		}
		pr.owesWrite = true
	}
	d.cont(pr)
}

// cont resumes a stopped node (SIGCONT). d.mu is held.
func (d *procDrill) cont(pr *proc) {
	pr.stopped, pr.release = false, false
	pr.frozeOn, pr.frozeTok, pr.retaken = "", 0, false
	resume(pr.cmd.Process)
	d.events = append(d.events, procEvent{node: pr.idx, at: time.Now(), verb: "continued"})
}

func (d *procDrill) send(pr *proc, format string, a ...any) {
	fmt.Fprintf(pr.stdin, format+"\n", a...) // a dead node's pipe fails: nothing to tell it
}
