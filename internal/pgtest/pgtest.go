// Package pgtest runs throwaway PostgreSQL servers for tests.
//
// Start gives each caller a fresh, empty database on one server shared by
// the whole test binary; the package's TestMain must call Main, which stops
// that server and removes its files after the tests. NewServer starts a
// dedicated server that a fault test may stop, restart or tamper with.
//
// The servers are built from the PostgreSQL server binaries found on the
// machine (BATON_PG_BINDIR, `pg_config --bindir`, /usr/lib/postgresql/*/bin
// or the PATH). They listen on 127.0.0.1 on a free port and on a unix socket
// in their own temporary directory (on Linux under /dev/shm, in memory,
// unless the durable server), run with fsync off, and trust every local
// connection: they are for tests only. initdb refuses to run as root,
// so when the tests run as root the server runs as the "postgres" OS user.
// The postmaster gets SIGQUIT if the test binary dies, so a crashed test
// run leaves no server behind (only its temporary directory). A new
// server's cluster is a copy of a pristine one kept, per set of binaries,
// in the user's cache directory (baton/pgtest under os.UserCacheDir, about
// 40 MB): initdb runs only for the first, or when the copy is missing, not
// the user's own, or does not start.
//
// With BATON_PG_URL set, Start creates its databases on that existing
// server instead (the URL's user needs the CREATEDB privilege), and drops
// them at the end of each test. NewServer always starts a local server.
//
// When no server can be had, Start and NewServer skip the test with a
// message naming what is missing, or fail it if BATON_REQUIRE lists
// "postgres" (see package testenv).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/internal/testport"
)

// Component is the name BATON_REQUIRE uses for PostgreSQL.
const Component = "postgres"

// URLVar names the environment variable holding the URL of an existing
// server to use instead of starting one.
const URLVar = "BATON_PG_URL"

// BinDirVar names the environment variable that points at the directory of
// the PostgreSQL server binaries (initdb, postgres).
const BinDirVar = "BATON_PG_BINDIR"

// ErrNotInstalled is returned by StartServer when the PostgreSQL server
// binaries, or an OS user to run them as, cannot be found.
var ErrNotInstalled = errors.New("PostgreSQL server binaries not found")

// Server is a PostgreSQL server for tests: a throwaway cluster in a
// temporary directory, or an existing server named by BATON_PG_URL.
type Server struct {
	// Local cluster; all empty for an external server.
	bindir string
	dir    string // temporary root, owned by the server's OS user
	data   string
	port   int
	cred   *credential // the OS user to run as; nil: this process's

	external string // BATON_PG_URL, when set

	fsync bool // StartDurableServer: fsync and synchronous commits on

	versionOnce sync.Once
	versionNum  int // server_version_num; 0: unknown

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartServer initialises a new cluster in a temporary directory and starts
// it. The caller must Close it. The error wraps ErrNotInstalled when the
// binaries are missing.
func StartServer() (*Server, error) { return startServer(false) }

// StartDurableServer is StartServer with fsync, synchronous commits and
// full page writes on, as a production server runs: for benchmarks whose
// figures must include the cost of durable commits.
func StartDurableServer() (*Server, error) { return startServer(true) }

func startServer(fsync bool) (*Server, error) {
	bindir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bindir: bindir, fsync: fsync}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("%w: running as root, and initdb needs a non-root OS user \"postgres\": %v", ErrNotInstalled, err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		s.cred = &credential{uid: uint32(uid), gid: uint32(gid)}
	}
	s.dir, err = os.MkdirTemp(scratchRoot(fsync), "baton-pgtest-")
	if err != nil {
		return nil, err
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.uid), int(s.cred.gid)); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
	s.data = filepath.Join(s.dir, "data")
	copied, err := s.initCluster()
	if err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	// The port is free when picked; another process could take it before
	// the postmaster binds it, so try a few.
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err == nil {
			err = s.Start()
		}
		if err == nil {
			return s, nil
		}
		if copied {
			// A cached cluster that does not start is not kept: this
			// server, and the next, get initdb's.
			s.dropTemplate()
			os.RemoveAll(s.data)
			if err := s.initdb(); err != nil {
				os.RemoveAll(s.dir)
				return nil, err
			}
			copied = false
			continue
		}
		if attempt == 2 {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
}

// scratchRoot is where a throwaway cluster's directory goes: on Linux a
// server without fsync lives in /dev/shm when it can, since its files
// never need to outlive the machine and every CREATE DATABASE of a test
// copies a template; the durable server, and every other system, in the
// temporary directory.
func scratchRoot(fsync bool) string {
	if !fsync && runtime.GOOS == "linux" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && unixWritable("/dev/shm") {
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

// unixWritable reports whether this process may create files in dir.
func unixWritable(dir string) bool {
	f, err := os.CreateTemp(dir, "baton-pgtest-probe-")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// findBinDir returns the directory holding initdb and postgres.
func findBinDir() (string, error) {
	var tried []string
	ok := func(dir string) bool {
		tried = append(tried, dir)
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(BinDirVar); dir != "" {
		if ok(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w: %s=%s has no initdb and postgres", ErrNotInstalled, BinDirVar, dir)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); ok(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if ok(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w (looked in %s, pg_config --bindir, /usr/lib/postgresql/*/bin and the PATH: %s; install the PostgreSQL server package or set %s)",
		ErrNotInstalled, BinDirVar, strings.Join(tried, ", "), BinDirVar)
}

func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}

// freePort returns a port for the server below the ephemeral range, where
// no outgoing connection takes it while Stop and Start restart the server.
func freePort() (int, error) { return testport.Free() }

// command returns a command that runs as the server's OS user.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	runAs(cmd, s.cred)
	return cmd
}

// Start starts the stopped local server again, on the same port and data,
// and waits until it accepts connections. It is an error for an external
// server.
func (s *Server) Start() error {
	if s.external != "" {
		return errors.New("pgtest: cannot start an external server (" + URLVar + ")")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	durability := []string{"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
	if s.fsync {
		durability = []string{"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on"}
	}
	cmd := s.command(filepath.Join(s.bindir, "postgres"), append([]string{
		"-D", s.data,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "max_connections=300",
	}, durability...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test binary dies, the postmaster gets an immediate-shutdown
	// signal instead of running on.
	quitWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := pgx.Connect(ctx, s.adminURL("postgres"))
		if err == nil {
			c.Close(ctx)
			s.cmd, s.exited = cmd, exited
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited at startup: %s", tail(logPath))
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("pgtest: postgres did not accept connections within 60s: %v\n%s", err, tail(logPath))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail returns the end of the server log, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop shuts the local server down (fast shutdown: open sessions are
// terminated) and waits for it to exit. Its data stays for Start. It is an
// error for an external server.
func (s *Server) Stop() error {
	if s.external != "" {
		return errors.New("pgtest: cannot stop an external server (" + URLVar + ")")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if s.cmd.Process.Signal(os.Interrupt) != nil {
		s.cmd.Process.Kill() // Windows: no signals
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd, s.exited = nil, nil
	return nil
}

// Close stops a local server and removes its files. It does nothing for an
// external server.
func (s *Server) Close() error {
	if s.external != "" {
		return nil
	}
	err := s.Stop()
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// adminURL is the superuser URL of database db on a local server.
func (s *Server) adminURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// URL returns the URL of database db on the server, as the superuser (or
// as BATON_PG_URL's user).
func (s *Server) URL(db string) string {
	if s.external != "" {
		u, err := url.Parse(s.external)
		if err != nil {
			return s.external
		}
		u.Path = "/" + db
		return u.String()
	}
	return s.adminURL(db)
}

// Exec runs sql with args as the superuser in the server's maintenance
// database, on a connection of its own; fault tests use it for
// pg_terminate_backend.
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	admin := s.external
	if admin == "" {
		admin = s.adminURL("postgres")
	}
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql, args...)
	return err
}

// CreateDatabase creates an empty database with a random name and returns
// its name.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	var b [8]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	// A local server (PostgreSQL 15 or later) copies the template's files
	// instead of writing them through the WAL: a third of the time, and
	// nothing to lose with fsync off.
	create := "CREATE DATABASE " + name
	if s.external == "" && s.fileCopy() {
		create += " STRATEGY FILE_COPY"
	}
	if err := s.Exec(ctx, create); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return name, nil
}

// DropDatabase drops database name, disconnecting its sessions.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	return s.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// The server shared by the test binary.
var shared struct {
	mu     sync.Mutex
	main   bool // Main is running the tests
	server *Server
	err    error
	// the durable server (StartDurable), started on first use
	durable    *Server
	durableErr error
}

// Main runs the tests of a package that uses Start and exits; call it from
// TestMain. It runs them through testenv.Run, which reports the tests that
// skipped for a missing component, and stops the shared server and removes
// its files after the tests.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := testenv.Run(m)
	shared.mu.Lock()
	for _, srv := range []*Server{shared.server, shared.durable} {
		if srv != nil {
			if err := srv.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "pgtest: stopping a shared server:", err)
			}
		}
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Shared returns the server shared by the test binary, starting it on first
// use (or using BATON_PG_URL). It skips or fails t when no server can be
// had. The package's TestMain must call Main.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain to use the shared server")
	}
	if shared.server == nil && shared.err == nil {
		if u := os.Getenv(URLVar); u != "" {
			shared.server = &Server{external: u}
		} else {
			shared.server, shared.err = StartServer()
		}
	}
	if shared.err != nil {
		if errors.Is(shared.err, ErrNotInstalled) {
			testenv.Require(t, Component, shared.err.Error())
		}
		t.Fatal(shared.err)
	}
	return shared.server
}

// StartDurable is Start on a second shared local server, started on first
// use, that runs with fsync, synchronous commits and full page writes on
// (StartDurableServer): for benchmarks whose figures must include the cost
// of a durable commit. With BATON_PG_URL set it is Start: that server's
// settings are its own.
func StartDurable(t testing.TB) string {
	t.Helper()
	if os.Getenv(URLVar) != "" {
		return Start(t)
	}
	shared.mu.Lock()
	if !shared.main {
		shared.mu.Unlock()
		t.Fatal("pgtest: call pgtest.Main(m) from TestMain to use the shared server")
	}
	if shared.durable == nil && shared.durableErr == nil {
		shared.durable, shared.durableErr = StartDurableServer()
	}
	s, err := shared.durable, shared.durableErr
	shared.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrNotInstalled) {
			testenv.Require(t, Component, err.Error())
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s.URL(db)
}

// Start creates a fresh, empty database on the shared server and returns
// its URL. The database is dropped at the end of the test when the server
// is external; a local server is removed whole by Main.
func Start(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.external != "" {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.DropDatabase(ctx, db); err != nil {
				t.Logf("pgtest: drop database %s: %v", db, err)
			}
		})
	}
	return s.URL(db)
}

// NewServer starts a dedicated local server for t, stopped and removed at
// the end of the test; fault tests stop and restart it. It skips or fails t
// when the binaries are missing.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if errors.Is(err, ErrNotInstalled) {
		testenv.Require(t, Component, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Logf("pgtest: close server: %v", err)
		}
	})
	return s
}

// NewRole creates a login role with a random name, a random password and
// no privilege beyond PUBLIC's, on the server of the database at dbURL
// (connecting as dbURL's user, who needs CREATEROLE), and returns its name
// and dbURL with its credentials: for tests of who may do what. At the
// end of the test the role's objects and grants in that database are
// dropped with it. Roles belong to the whole server: never give one a
// fixed name.
func NewRole(t testing.TB, dbURL string) (role, roleURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: NewRole: %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	role = "r_" + hex.EncodeToString(b[:])
	rand.Read(b[:])
	password := hex.EncodeToString(b[:])
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgtest: NewRole: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatalf("pgtest: NewRole: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Logf("pgtest: drop role %s: %v", role, err)
			return
		}
		defer c.Close(context.Background())
		for _, q := range []string{"REASSIGN OWNED BY " + role + " TO CURRENT_USER", "DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Logf("pgtest: drop role %s: %s: %v", role, q, err)
				return
			}
		}
	})
	u.User = url.UserPassword(role, password)
	return role, u.String()
}

// fileCopy reports whether the server takes CREATE DATABASE's STRATEGY
// (PostgreSQL 15 and later).
func (s *Server) fileCopy() bool {
	s.versionOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, s.adminURL("postgres"))
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		var v string
		if c.QueryRow(ctx, "SHOW server_version_num").Scan(&v) == nil {
			s.versionNum, _ = strconv.Atoi(v)
		}
	})
	return s.versionNum >= 150000
}
