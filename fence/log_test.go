package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store"
)

// openLogged opens a fresh SQLite file with the fence, its log and an
// invoice table.
func openLogged(t *testing.T) (*sql.DB, fence.Dialect) {
	t.Helper()
	d, err := fence.SQLite.WithLog(fence.DefaultLogTable)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "f.db")+sqliteDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db, d); err != nil {
		t.Fatal(err)
	}
	if err := fence.CreateTable(ctx, db, d); err != nil { // idempotent
		t.Fatal(err)
	}
	return db, d
}

// write runs one fenced write of w and commits it unless rollback; a
// refusal is logged after the rollback, as the doc says.
func write(t *testing.T, db *sql.DB, d fence.Dialect, w fence.Write, rollback bool) error {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = fence.CheckWriteTx(ctx, tx, d, w)
	if err != nil || rollback {
		tx.Rollback()
		if lerr := fence.LogRefusal(ctx, db, d, w, err); lerr != nil {
			t.Fatal(lerr)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return nil
}

// The log holds exactly the committed acceptances, in the fence's order,
// and the refusals logged after the rollback, with the highest token.
func TestFenceLog(t *testing.T) {
	db, d := openLogged(t)
	ctx := context.Background()
	if err := write(t, db, d, fence.Write{Name: "job", Token: 1, Period: "P1"}, false); err != nil {
		t.Fatal(err)
	}
	if err := write(t, db, d, fence.Write{Name: "job", Token: 2, Period: "P2"}, true); err != nil {
		t.Fatal(err) // accepted, then rolled back: no row, and the fence stays at 1
	}
	if err := write(t, db, d, fence.Write{Name: "job", Token: 3, Period: "P2"}, false); err != nil {
		t.Fatal(err)
	}
	if err := write(t, db, d, fence.Write{Name: "job", Token: 2, Period: "P3"}, false); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("token 2 after 3: %v, want stale", err)
	}
	if err := write(t, db, d, fence.Write{Name: "other", Token: 1}, false); err != nil {
		t.Fatal(err)
	}
	log, err := fence.ReadLog(ctx, db, d, "job")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		token   uint64
		period  string
		outcome string
		highest uint64
	}{{1, "P1", fence.Accepted, 1}, {3, "P2", fence.Accepted, 3}, {2, "P3", fence.Refused, 3}}
	if len(log) != len(want) {
		t.Fatalf("log %+v, want %d rows", log, len(want))
	}
	for i, w := range want {
		e := log[i]
		if e.Name != "job" || e.Token != w.token || e.Period != w.period || e.Outcome != w.outcome || e.Highest != w.highest {
			t.Errorf("row %d: %+v, want %+v", i, e, w)
		}
		if i > 0 && e.Seq <= log[i-1].Seq {
			t.Errorf("row %d: seq %d after %d", i, e.Seq, log[i-1].Seq)
		}
		if time.Since(e.At) > time.Minute || time.Since(e.At) < 0 {
			t.Errorf("row %d: at %v", i, e.At)
		}
	}
	// CheckTx logs too (no period); a dialect without a log logs nothing.
	tx, _ := db.BeginTx(ctx, nil)
	if err := fence.CheckTx(ctx, tx, d, "job", 3); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	tx, _ = db.BeginTx(ctx, nil)
	if err := fence.CheckTx(ctx, tx, fence.SQLite, "job", 4); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	if log, _ = fence.ReadLog(ctx, db, d, "job"); len(log) != 4 || log[3].Period != "" || log[3].Token != 3 {
		t.Fatalf("after CheckTx: %+v", log)
	}
	// LogRefusal records nothing for an error that is no refusal.
	if err := fence.LogRefusal(ctx, db, d, fence.Write{Name: "job", Token: 9}, errors.New("disk full")); err != nil {
		t.Fatal(err)
	}
	// PruneLog deletes by age, per name.
	if n, err := fence.PruneLog(ctx, db, d, "job", time.Now().Add(-time.Hour), ""); err != nil || n != 0 {
		t.Fatalf("prune older than an hour: %d, %v", n, err)
	}
	if n, err := fence.PruneLog(ctx, db, d, "job", time.Now().Add(time.Second), "P2"); err != nil || n != 2 {
		t.Fatalf("prune all of job below P2: %d, %v, want 2 (P1 and the row with no period)", n, err)
	}
	if n, err := fence.PruneLog(ctx, db, d, "job", time.Now().Add(time.Second), ""); err != nil || n != 2 {
		t.Fatalf("prune the rest of job: %d, %v, want 2", n, err)
	}
	if log, _ := fence.ReadLog(ctx, db, d, "other"); len(log) != 1 {
		t.Fatalf("other's log after pruning job: %+v", log)
	}
}

func TestFenceLogErrors(t *testing.T) {
	if _, err := fence.SQLite.WithLog("baton_fence"); err == nil {
		t.Error("WithLog(the fence table) accepted")
	}
	if _, err := fence.SQLite.WithLog("x; DROP"); err == nil {
		t.Error("WithLog(not an identifier) accepted")
	}
	if _, err := (fence.Dialect{}).WithLog("log"); err == nil {
		t.Error("zero Dialect WithLog accepted")
	}
	ctx := context.Background()
	if err := fence.LogRefusal(ctx, nil, fence.SQLite, fence.Write{}, fence.ErrStaleToken); err == nil {
		t.Error("LogRefusal without a log accepted")
	}
	if _, err := fence.ReadLog(ctx, nil, fence.SQLite, "x"); err == nil {
		t.Error("ReadLog without a log accepted")
	}
	d, _ := fence.Postgres.WithLog("my_log")
	if d, err := d.WithTable("other_fence"); err != nil || d.LogTable() != "my_log" {
		t.Errorf("WithTable after WithLog: %v, log %q", err, d.LogTable())
	}
}

// A Guard with a log, directly and behind Middleware, logs what it
// accepted and refused, in its order, with the period.
func TestGuardLog(t *testing.T) {
	db, d := openLogged(t)
	var logErrs []error
	g := fence.NewGuard()
	if err := g.SetLog(fence.GuardLog{DB: db, Dialect: d, OnError: func(err error) { logErrs = append(logErrs, err) }}); err != nil {
		t.Fatal(err)
	}
	if err := g.SetLog(fence.GuardLog{DB: db, Dialect: fence.SQLite}); err == nil {
		t.Error("SetLog with a Dialect that keeps no log accepted")
	}
	if err := g.DoWrite(fence.Write{Name: "job", Token: 2, Period: "P1"}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("work failed")
	if err := g.DoWrite(fence.Write{Name: "job", Token: 3, Period: "P2"}, func() error { return failed }); err != failed {
		t.Fatal(err) // not applied: not logged
	}
	if err := g.DoWrite(fence.Write{Name: "job", Token: 1, Period: "P2"}, func() error { return nil }); !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("token 1 after 2: %v", err)
	}
	srv := httptest.NewServer(fence.Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	for _, w := range []fence.Write{{Name: "job", Token: 2, Period: "P3"}, {Name: "job", Token: 1, Period: "P4"}} {
		req, _ := http.NewRequest("POST", srv.URL, nil)
		fence.SetWriteHeaders(req, w)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	log, err := fence.ReadLog(context.Background(), db, d, "job")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, fmt.Sprintf("%s %d %s %d", e.Period, e.Token, e.Outcome, e.Highest))
	}
	want := []string{"P1 2 accepted 2", "P2 1 refused 2", "P3 2 accepted 2", "P4 1 refused 2"}
	if !slices.Equal(got, want) || len(logErrs) > 0 {
		t.Fatalf("log %q, want %q; log errors %v", got, want, logErrs)
	}
}

// docs/SECURITY.md, "the fence database": a fence log row that no writer
// makes (issue 42: token -1, which ReadLog printed as 0) is a corrupt
// record, reported in one line naming the row and the value, never read
// as another token.
func TestReadLogCorruptRecord(t *testing.T) {
	for _, c := range []struct {
		name, token, highest, outcome, says string
	}{
		{"negative token", "-1", "-1", "'accepted'", "token -1 is not a fencing token"},
		{"token 0", "0", "0", "'accepted'", "token 0 is not a fencing token"},
		{"negative highest", "3", "-7", "'refused'", "highest -7 is not a token"},
		{"text token", "'12abc'", "1", "'accepted'", `token "12abc" (string) is not a fencing token`},
		{"real token", "1.5", "1", "'accepted'", `token "1.5" (float64) is not a fencing token`},
		{"unknown outcome", "2", "2", "'maybe'", `outcome "maybe" is neither`},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, d := openLogged(t)
			ctx := context.Background()
			if err := write(t, db, d, fence.Write{Name: "job", Token: 1, Period: "P1"}, false); err != nil {
				t.Fatal(err)
			}
			// SQLite keeps what it is given in a BIGINT column: a text or
			// a real as well.
			if _, err := db.Exec(`INSERT INTO baton_fence_log (name, token, period, outcome, highest, at_ns) VALUES ('job', ` +
				c.token + `, 'P2', ` + c.outcome + `, ` + c.highest + `, 0)`); err != nil {
				t.Fatal(err)
			}
			log, err := fence.ReadLog(ctx, db, d, "job")
			if !errors.Is(err, store.ErrCorrupt) || log != nil {
				t.Fatalf("%+v, %v; want store.ErrCorrupt", log, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "corrupt record at row seq 2 (name \"job\")") || !strings.Contains(msg, c.says) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q; want one line naming row seq 2 and saying %q", msg, c.says)
			}
			t.Log(msg)
		})
	}
}
