package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/fence"
	_ "modernc.org/sqlite"
)

// sqliteDSN is how CheckTx's doc says to open SQLite: every transaction
// takes the write lock at BEGIN, and a writer waits for another instead of
// failing with SQLITE_BUSY. WAL with synchronous=NORMAL is the usual
// production setting.
const sqliteDSN = "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)"

// openSQLite opens a fresh SQLite file with the fence table and a business
// table, invoice, whose autoincrement id records commit order.
func openSQLite(tb testing.TB) *sql.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "fence.db")
	db, err := sql.Open("sqlite", "file:"+path+sqliteDSN)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := fence.CreateTable(ctx, db, fence.SQLite); err != nil {
		tb.Fatal(err)
	}
	const invoice = `CREATE TABLE invoice (id INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL, line TEXT NOT NULL)`
	if _, err := db.ExecContext(ctx, invoice); err != nil {
		tb.Fatal(err)
	}
	return db
}

// writeInvoice writes one invoice line fenced by token, in one transaction,
// and rolls back on any error as CheckTx requires.
func writeInvoice(ctx context.Context, db *sql.DB, name string, token uint64, line string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := fence.CheckTx(ctx, tx, fence.SQLite, name, token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invoice (token, line) VALUES (?, ?)`, int64(token), line); err != nil {
		return err
	}
	return tx.Commit()
}

// invoiceTokens returns the tokens of the invoice rows in commit order.
func invoiceTokens(tb testing.TB, db *sql.DB) []uint64 {
	tb.Helper()
	rows, err := db.Query(`SELECT token FROM invoice ORDER BY id`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var toks []uint64
	for rows.Next() {
		var t int64
		if err := rows.Scan(&t); err != nil {
			tb.Fatal(err)
		}
		toks = append(toks, uint64(t))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return toks
}

func storedToken(tb testing.TB, db *sql.DB, name string) uint64 {
	tb.Helper()
	var t int64
	if err := db.QueryRow(`SELECT token FROM baton_fence WHERE name = ?`, name).Scan(&t); err != nil {
		tb.Fatal(err)
	}
	return uint64(t)
}

// TestCheckTxStaleWriterNeverLands is the paused-leader case: the leader of
// term 1 is paused, term 2's leader writes, and then term 1's leader wakes
// and writes. Its invoice line must not land.
func TestCheckTxStaleWriterNeverLands(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if err := writeInvoice(ctx, db, "billing", 2, "new leader"); err != nil {
		t.Fatalf("token 2: %v", err)
	}
	err := writeInvoice(ctx, db, "billing", 1, "paused leader")
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("token 1 after 2: err = %v, want ErrStaleToken", err)
	}
	want := `stale fencing token: a newer leader has already written: name "billing", token 1, highest 2`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if got := invoiceTokens(t, db); len(got) != 1 || got[0] != 2 {
		t.Errorf("invoice tokens = %v, want [2]", got)
	}
	if got := storedToken(t, db, "billing"); got != 2 {
		t.Errorf("stored token = %d, want 2", got)
	}
}

// TestCheckTxRollbackRaisesNothing: a check that passed but whose
// transaction rolled back leaves the stored token where it was.
func TestCheckTxRollbackRaisesNothing(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	if err := writeInvoice(ctx, db, "billing", 1, "first"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.CheckTx(ctx, tx, fence.SQLite, "billing", 5); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := storedToken(t, db, "billing"); got != 1 {
		t.Errorf("stored token after rollback = %d, want 1", got)
	}
	if err := writeInvoice(ctx, db, "billing", 1, "still current"); err != nil {
		t.Errorf("token 1 after a rolled-back 5: %v", err)
	}
}

func TestCheckTxEqualTokenAccepted(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	for i := range 5 {
		if err := writeInvoice(ctx, db, "billing", 3, "line"); err != nil {
			t.Fatalf("write %d at token 3: %v", i, err)
		}
	}
	if got := invoiceTokens(t, db); len(got) != 5 {
		t.Errorf("%d invoice rows, want 5", len(got))
	}
	// Names are fenced separately.
	if err := writeInvoice(ctx, db, "reports", 1, "line"); err != nil {
		t.Errorf("token 1 for another name: %v", err)
	}
}

func TestCheckTxRefuses(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	tests := []struct {
		name    string
		d       fence.Dialect
		fence   string
		token   uint64
		wantErr error // nil: any error
		wantMsg string
	}{
		{"above MaxInt64", fence.SQLite, "billing", math.MaxInt64 + 1, fence.ErrInvalidToken, "above 9223372036854775807"},
		{"max uint64", fence.SQLite, "billing", math.MaxUint64, fence.ErrInvalidToken, "above"},
		{"token zero", fence.SQLite, "billing", 0, fence.ErrInvalidToken, "token 0"},
		{"empty name", fence.SQLite, "", 1, fence.ErrNoFence, "empty name"},
		{"zero dialect", fence.Dialect{}, "billing", 1, nil, "zero Dialect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			err = fence.CheckTx(ctx, tx, tt.d, tt.fence, tt.token)
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want %v mentioning %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
	// MaxInt64 itself is storable.
	if err := writeInvoice(ctx, db, "billing", math.MaxInt64, "top"); err != nil {
		t.Errorf("token MaxInt64: %v", err)
	}
	if err := fence.CheckTx(ctx, nil, fence.SQLite, "billing", 1); err == nil {
		t.Error("nil tx: no error")
	}
}

func TestCheckTxMissingTable(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	other, err := fence.SQLite.WithTable("not_created")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = fence.CheckTx(ctx, tx, other, "billing", 1)
	if err == nil || errors.Is(err, fence.ErrStaleToken) {
		t.Errorf("err = %v, want a database error", err)
	}
}

func TestWithTable(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	d, err := fence.SQLite.WithTable("my_fence")
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != "sqlite:my_fence" {
		t.Errorf("String = %q", d)
	}
	for range 2 { // CreateTable is idempotent
		if err := fence.CreateTable(ctx, db, d); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.CheckTx(ctx, tx, d, "billing", 4); err != nil {
		t.Fatal(err)
	}
	if err := fence.CheckTx(ctx, tx, d, "billing", 3); !errors.Is(err, fence.ErrStaleToken) {
		t.Errorf("err = %v, want ErrStaleToken", err)
	}
	tx.Rollback()

	for _, bad := range []string{"", "1abc", "a-b", "a.b", "a b", `a"`, "x;DROP TABLE t", strings.Repeat("a", 64)} {
		if _, err := fence.Postgres.WithTable(bad); err == nil {
			t.Errorf("WithTable(%q): no error", bad)
		}
	}
	if _, err := (fence.Dialect{}).WithTable("t"); err == nil {
		t.Error("zero Dialect WithTable: no error")
	}
}

// TestCheckTxConcurrent has several goroutines, each on its own
// connection, write invoice lines with random, mostly rising tokens. Whatever the
// interleaving, the tokens of the lines that landed, in commit order, never
// decrease, and the stored token is the last of them.
func TestCheckTxConcurrent(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	const workers, writes = 6, 40
	db.SetMaxOpenConns(workers)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)

	var mu sync.Mutex
	var accepted, stale int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range writes {
				// Tokens climb with i, jittered, so that the workers
				// overtake each other and both outcomes are common.
				tok := 1 + uint64(i)/4 + rng.Uint64N(2)
				err := writeInvoice(ctx, db, "billing", tok, "line")
				mu.Lock()
				switch {
				case err == nil:
					accepted++
				case errors.Is(err, fence.ErrStaleToken):
					stale++
				default:
					t.Errorf("worker %d: %v", w, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	toks := invoiceTokens(t, db)
	t.Logf("%d accepted, %d stale", accepted, stale)
	if len(toks) != accepted {
		t.Fatalf("%d invoice rows, %d writes accepted", len(toks), accepted)
	}
	for i := 1; i < len(toks); i++ {
		if toks[i] < toks[i-1] {
			t.Fatalf("seed %d: invoice %d has token %d after token %d", seed, i+1, toks[i], toks[i-1])
		}
	}
	if len(toks) > 0 {
		if got, last := storedToken(t, db, "billing"), toks[len(toks)-1]; got != last {
			t.Errorf("stored token %d, last invoice token %d", got, last)
		}
	}
}
