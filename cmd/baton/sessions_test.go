package main

import (
	"encoding/json"
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
	for range 3 {
		hold("100ms")
	}
	ss := sessions()
	if len(ss) != 3 {
		t.Fatalf("%d session records after 3 runs; want 3: %+v", len(ss), ss)
	}
	for i, s := range ss {
		if s.State != inspect.SessionDead || s.Names == nil || *s.Names != map[bool]int{true: 20, false: 0}[i == len(ss)-1] && *s.Names != 0 && *s.Names != 20 {
			t.Fatalf("session %+v", s)
		}
	}
	code, out, _ := runBaton(t, "sessions", "--store", url)
	if code != exitOK || !strings.Contains(out, "3 session records: 0 live, 0 expired, 3 dead") {
		t.Fatalf("sessions: %d\n%s", code, out)
	}
	// Past the grace (5 leases + 2e), a Group process that lives a few
	// leases deletes them; its own session is left, dead, once it exits.
	time.Sleep(6 * time.Second)
	hold("3s")
	ss = sessions()
	if len(ss) != 1 || ss[0].State != inspect.SessionDead || *ss[0].Names != 20 {
		t.Fatalf("after a later run: %+v; want only its own dead session, with the 20 names", ss)
	}
	code, out, _ = runBaton(t, "status", "--store", url, "--all", "--json")
	var l statusList
	if err := json.Unmarshal([]byte(out), &l); code != exitOK || err != nil || len(l.Jobs) != 20 {
		t.Fatalf("status --all --json: %d %v", code, err)
	}
	for _, j := range l.Jobs {
		if j.State.Token != 4 || j.State.State != inspect.SessionEnded {
			t.Fatalf("%s after 4 runs: %+v; want token 4, session ended", j.Name, j.State)
		}
	}
	if code, _, errOut := runBaton(t, "sessions", "--store", url, "extra"); code != exitUsage || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("sessions with an argument: %d %q", code, errOut)
	}
}
