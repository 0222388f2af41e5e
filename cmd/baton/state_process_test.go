package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/inspect"
	"github.com/batonhq/baton/internal/pgtest"
)

// stateBackends are the stores the state tests run on: a URL per backend.
func stateBackends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "b.db") },
		"postgres": func(t *testing.T) string { return pgtest.Start(t) },
		"etcd": func(t *testing.T) string {
			c := etcdtest.StartCluster(t, 1)
			return "etcd://" + c.Endpoint(0) + "?prefix=/state-test/"
		},
	}
}

// statusState reads name's state with 'baton status --json' and, through
// the serve API's reader, what the page shows; both must agree.
func statusState(t *testing.T, s *server, url, name string) inspect.State {
	t.Helper()
	st, ok := tryStatusState(t, s, url, name)
	if !ok {
		t.Fatalf("status %s: not in the store", name)
	}
	return st
}

// tryStatusState is statusState that answers false for a name the store
// does not know yet.
func tryStatusState(t *testing.T, s *server, url, name string) (inspect.State, bool) {
	t.Helper()
	code, out, errOut := runBaton(t, "status", "--store", url, "--json", name)
	if code == exitFailure && strings.Contains(errOut, inspect.ErrUnknown.Error()) {
		return inspect.State{}, false
	}
	if code != exitOK {
		t.Fatalf("status %s: exit %d: %s", name, code, errOut)
	}
	var v inspect.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	d, err := s.read(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if d.State.State != v.State.State && !(v.State.State == inspect.Held && d.State.State == inspect.ProbablyDead) {
		// The page read after status: held may have become probably
		// dead in between, never the other way round.
		t.Fatalf("status says %s, serve says %s", v.State.State, d.State.State)
	}
	return v.State, true
}

// waitState polls name until its state is want, for at most d.
func waitState(t *testing.T, s *server, url, name, want string, d time.Duration) inspect.State {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st, ok := tryStatusState(t, s, url, name)
		if ok && st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s (%s) after %v; want %s", name, st.State, st.Describe(), d, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Every view derives a name's state from one definition, on every backend:
// a Group process that is killed leaves its names "probably dead" once its
// session is silent for a lease by store time, never held with lease left;
// one that exits leaves them free to take at once (session ended); a
// single-name holder that exits leaves its name free.
func TestProcessStateViews(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its own stores and processes; the waits have seconds of slack
	for backend, open := range stateBackends(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			url := open(t)
			st, err := (&env{}).openStore(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			s, err := newServer(st, backend, nil, time.Second, "")
			if err != nil {
				t.Fatal(err)
			}
			const name = "g-000002"
			hold := func(duration string) []string {
				return []string{"bench", "hold", "--store", url, "--names", "3", "--prefix", "g-",
					"--lease", "2s", "--clock-margin", "100ms", "--duration", duration}
			}

			// A Group process, killed.
			cmd, _, errb := startBaton(t, hold("1h")...)
			held := waitState(t, s, url, name, inspect.Held, 60*time.Second)
			if held.Session == "" || held.Token != 1 || held.LeaseLeftSeconds == nil {
				t.Fatalf("held: %+v", held)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			killed := time.Now()
			dead := waitState(t, s, url, name, inspect.ProbablyDead, 2*time.Second+10*time.Second)
			t.Logf("%s: probably dead %v after SIGKILL: %s", backend, time.Since(killed).Round(time.Millisecond), dead.Describe())
			// Probably dead is a silence longer than the lease; the JSON
			// rounds it to the millisecond, so one just over 2s reads 2
			// (CI, etcd: "no renewal for 2s against a 2s lease").
			if dead.LeaseLeftSeconds != nil || dead.SinceRenewalSeconds < 2 {
				t.Fatalf("probably dead with lease left: %+v", dead)
			}

			// A Group process that takes the names over and exits.
			cmd, _, errb = startBaton(t, hold("1s")...)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("bench hold: %v\n%s", err, errb.String())
			}
			ended := statusState(t, s, url, name)
			if ended.State != inspect.SessionEnded || ended.Token != 2 || ended.LeaseLeftSeconds != nil {
				t.Fatalf("after a clean exit: %+v (%s)", ended, ended.Describe())
			}

			// A single-name holder that exits.
			cmd, _, errb = startBaton(t, "run", "--store", url, "--lease", "2s", "--grace", "500ms", "solo", "--", "sleep", "60")
			// Its token is 1 unless a renewal starved on a loaded machine
			// cost it the lease and it was elected again (seen at load 10).
			h := waitState(t, s, url, "solo", inspect.Held, 60*time.Second)
			if h.Session != "" || h.Token < 1 {
				t.Fatalf("solo held: %+v", h)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("baton run: %v\n%s", err, errb.String())
			}
			if free := statusState(t, s, url, "solo"); free.State != inspect.Free || free.Token < h.Token {
				t.Fatalf("solo after a clean exit: %+v (held with token %d)", free, h.Token)
			}
		})
	}
}
