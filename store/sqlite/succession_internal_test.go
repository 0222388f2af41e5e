package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// queryPlan returns the details of SQLite's plan for q.
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestSuccessionReadsByIndex: HeldThrough reads the range of the session
// records and a range of the session index, and DeleteSession's check one entry of it and the range of the
// session records: neither scans the table.
func TestSuccessionReadsByIndex(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []struct {
		what, query string
		want        []string
	}{
		{"HeldThrough", s.heldThroughQuery(), []string{"USING INDEX baton_election_session (session=? AND name>?)"}},
		{"HeldThrough's chain", successorsQuery, []string{"USING INDEX sqlite_autoindex_baton_election_1 (name>? AND name<?)"}},
		{"DeleteSession's check", referencedQuery, []string{"USING COVERING INDEX baton_election_session (session=?)", "USING INDEX sqlite_autoindex_baton_election_1 (name>? AND name<?)"}},
	} {
		args := []any{"@session/x", "", 10}
		if q.query == successorsQuery {
			args = nil
		}
		plan := queryPlan(t, s, q.query, args...)
		for _, w := range q.want {
			if !strings.Contains(plan, w) {
				t.Errorf("query plan of %s = %q, want %q", q.what, plan, w)
			}
		}
		if strings.Contains(plan, "SCAN baton_election") {
			t.Errorf("query plan of %s = %q scans the table", q.what, plan)
		}
	}
}
