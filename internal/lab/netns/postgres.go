package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PostgresPort is the port of a Postgres server on its host.
const PostgresPort = 5432

// Postgres is a throwaway PostgreSQL server on one host of a Net, listening
// on the host's address, trusting every connection from the test subnet,
// with fsync off: for tests and drills only. initdb refuses to run as
// root, so the server runs as the "postgres" OS user.
type Postgres struct {
	nt     *Net
	host   *Host
	bindir string
	dir    string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartPostgres initialises a cluster in a new temporary directory (owned
// by the postgres user, removed by Close) and starts the server on h,
// waiting until it accepts connections. It needs
// the PostgreSQL server binaries (pg_config --bindir, or
// /usr/lib/postgresql/*/bin) and an OS user "postgres".
func StartPostgres(nt *Net, h *Host) (*Postgres, error) {
	bindir, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("netns: PostgreSQL runs as the OS user \"postgres\", which does not exist: %v (apt-get install postgresql)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	tmp, err := os.MkdirTemp("", "baton-netns-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{nt: nt, host: h, bindir: bindir, dir: tmp}
	if err := os.Chown(p.dir, uid, gid); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	initdb := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(bindir, "initdb"),
		"-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("netns: initdb: %v: %s", err, out)
	}
	hba, err := os.OpenFile(filepath.Join(p.data(), "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	_, err = fmt.Fprintf(hba, "host all all %s trust\n", Subnet)
	if cerr := hba.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// URL returns the store URL of the server's postgres database.
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@%s:%d/postgres?sslmode=disable", p.host.addr, PostgresPort)
}

// Host returns the server's host.
func (p *Postgres) Host() *Host { return p.host }

// Start starts the stopped server and waits until it accepts connections.
func (p *Postgres) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("netns: postgres is running")
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := p.host.Command("runuser", "-u", "postgres", "--", filepath.Join(p.bindir, "postgres"),
		"-D", p.data(), "-p", strconv.Itoa(PostgresPort),
		"-c", "listen_addresses="+p.host.addr, "-c", "unix_socket_directories="+p.dir,
		"-c", "max_connections=200", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := p.nt.Start(cmd); err != nil {
		return fmt.Errorf("netns: starting postgres: %w", err)
	}
	p.cmd = cmd
	deadline := time.Now().Add(memberStartTimeout)
	for {
		ready := p.host.Command("pg_isready", "-q", "-U", "postgres", "-h", p.host.addr, "-p", strconv.Itoa(PostgresPort))
		if ready.Run() == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: postgres did not accept connections within %v: %s", memberStartTimeout, tailFile(filepath.Join(p.dir, "postgres.log")))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill kills the postmaster (SIGKILL: a crash, recovered from on Start)
// and waits until no process of the server is left on its host; its data
// stays for Start.
func (p *Postgres) Kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	// The postmaster is runuser's child: killing it by its pid lets
	// runuser reap it, so that no zombie keeps postmaster.pid's pid alive
	// and the restarted server does not refuse to start.
	if b, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && pid > 1 {
			killPid(pid)
		}
	}
	done := make(chan struct{})
	go func() { p.nt.Wait(cmd); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	// The backends notice their postmaster's death and exit.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, _ := exec.Command("ip", "netns", "pids", p.host.ns).Output()
		if len(strings.Fields(string(out))) == 0 {
			return
		}
	}
	killIn(p.host.ns)
}

// Close kills the server and removes its files.
func (p *Postgres) Close() {
	p.Kill()
	os.RemoveAll(p.dir)
}

// pgBinDir returns the directory of initdb and postgres.
func pgBinDir() (string, error) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	glob, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	dirs = append(dirs, glob...)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("netns: no PostgreSQL server binaries (initdb) in pg_config --bindir or /usr/lib/postgresql/*/bin (apt-get install postgresql)")
}
