package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storetest"
)

// BenchmarkMoveBySession100k is the floor BenchmarkTakeover100k is
// measured against (issue #28's bulk takeover): every name of a session
// moved to another in one transaction of two set-based statements on the
// store's own tables, with no compare per name: one UPDATE ... WHERE
// session = ? (holder, session, token + 1, version, the changed column and
// its index, the log sequence), one INSERT ... SELECT of a log event per
// name, one commit (WAL, synchronous=FULL, as the store writes). It is no
// design of the store's (no version is compared, the counter is not
// raised): it is what the file's B-trees cost for the rows a takeover of
// 100,000 names must write, whatever statements write them. One iteration
// moves the 100,000 names; the next moves them back. It reports the wall
// time per 1,000 names (ms/1000, BenchmarkTakeover100k's unit) and the
// process's CPU time per name (cpu-ns/name).
func BenchmarkMoveBySession100k(b *testing.B) {
	const names = 100000
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	sess, err := s.Swap(ctx, store.Swap{Record: store.Record{Name: store.SessionPrefix + "n1/i1/1", Holder: "n1", Incarnation: "i1", Lease: 15 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	storetest.HoldMany(b, s, sess, names)
	sessions := [2][2]string{{"n2", store.SessionPrefix + "n2/i1/1"}, {"n1", sess.Name}}
	c := s.writer.Load()
	if c == nil {
		b.Fatal("the store has no writer connection")
	}
	cpu0 := CPUTime(b)
	for i := 0; b.Loop(); i++ {
		to, from := sessions[i%2], sessions[(i+1)%2]
		for _, stmt := range []struct {
			q    string
			args []any
		}{
			{`BEGIN IMMEDIATE`, nil},
			{`UPDATE baton_election SET holder = ?, session = ?, token = token + 1, version = version + 1,
				changed = ?, log_seq = log_seq + 1, updated_ns = ? WHERE session = ?`,
				[]any{to[0], to[1], int64(names*(i+2) + 1), time.Now().UnixNano(), from[1]}},
			{`INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns)
				SELECT name, log_seq, ?, holder, incarnation, token, '', updated_ns FROM baton_election WHERE session = ?`,
				[]any{string(store.TakenOver), to[1]}},
			{`COMMIT`, nil},
		} {
			r, err := c.ExecContext(ctx, stmt.q, stmt.args...)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := r.RowsAffected(); stmt.args != nil && n != names {
				b.Fatalf("%d rows written, want %d", n, names)
			}
		}
	}
	cpu := CPUTime(b) - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N*names/1000), "ms/1000")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*names), "cpu-ns/name")
}
