package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/inspect"
)

// Group processes that exit leave dead session records; 'baton sessions'
// lists them with their names; a later Group process deletes the ones
// past the grace, and every name keeps its token (taken with the next one
// by each process).
func TestProcessSessionsCollected(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel() // its own SQLite file and processes
	url := "sqlite:" + filepath.Join(t.TempDir(), "b.db")
	hold := func(duration string) {
		t.Helper()
		cmd, _, errb := startBaton(t, "bench", "hold", "--store", url, "--names", "20", "--lease", "1s", "--clock-margin", "100ms", "--duration", duration)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("bench hold: %v\n%s", err, errb.String())
		}
	}
	sessions := func() []inspect.Session {
		t.Helper()
		code, out, errOut := runBaton(t, "sessions", "--store", url, "--json")
		var ss []inspect.Session
		if err := json.Unmarshal([]byte(out), &ss); code != exitOK || err != nil {
			t.Fatalf("sessions --json: exit %d %v: %s%s", code, err, out, errOut)
		}
		return ss
	}
	// A process's sessions are named NODE/INCARNATION/N: one incarnation a
	// process. A loaded machine may make a process lose its session (a
	// lease of 1s) and start another, so the test counts processes by
	// incarnation, not records.
	incarnation := func(s inspect.Session) string {
		f := strings.Split(s.Name, "/")
		return f[len(f)-2]
	}
	for range 3 {
		hold("100ms")
	}
	ss := sessions()
	earlier := map[string]bool{}
	for _, s := range ss {
		earlier[incarnation(s)] = true
		if s.State == inspect.SessionLive || s.Names == nil || *s.Names != 0 && *s.Names != 20 {
			t.Fatalf("session %+v after its process exited", s)
		}
	}
	if len(earlier) != 3 {
		t.Fatalf("sessions of %d processes after 3 runs; want 3: %+v", len(earlier), ss)
	}
	code, out, _ := runBaton(t, "sessions", "--store", url)
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("%d session records: 0 live, ", len(ss))) {
		t.Fatalf("sessions: %d\n%s", code, out)
	}
	// Past the grace (5 leases + 2e), a Group process that lives a few
	// leases deletes them; its own sessions are left, ended, once it
	// exits, and its last holds the 20 names.
	time.Sleep(6 * time.Second)
	hold("3s")
	ss = sessions()
	if len(ss) == 0 || ss[len(ss)-1].Names == nil || *ss[len(ss)-1].Names != 20 {
		t.Fatalf("after a later run: %+v; want its own sessions, the last with the 20 names", ss)
	}
	for _, s := range ss {
		if earlier[incarnation(s)] || s.State == inspect.SessionLive || incarnation(s) != incarnation(ss[0]) {
			t.Fatalf("after a later run: %+v; want only its own ended sessions (%+v is not)", ss, s)
		}
	}
	code, out, _ = runBaton(t, "status", "--store", url, "--all", "--json")
	var l statusList
	if err := json.Unmarshal([]byte(out), &l); code != exitOK || err != nil || len(l.Jobs) != 20 {
		t.Fatalf("status --all --json: %d %v", code, err)
	}
	// Every name kept its token: at least one more a run (4 runs).
	for _, j := range l.Jobs {
		if j.State.Token < 4 || j.State.State != inspect.SessionEnded {
			t.Fatalf("%s after 4 runs: %+v; want token 4 or more, session ended", j.Name, j.State)
		}
	}
	if code, _, errOut := runBaton(t, "sessions", "--store", url, "extra"); code != exitUsage || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("sessions with an argument: %d %q", code, errOut)
	}
}
