package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/batonhq/baton/fence"
)

func testKey(t *testing.T) *fence.Key {
	t.Helper()
	k, err := fence.ParseKey("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// With a key, a forged Baton-Token without a valid signature is refused
// with 403 and does not move the fence; the real leader's next write
// succeeds.
func TestMiddlewareRefusesForgedToken(t *testing.T) {
	k := testKey(t)
	g, err := fence.NewSignedGuard(k)
	if err != nil {
		t.Fatal(err)
	}
	var served int
	srv := httptest.NewServer(fence.Middleware(g, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })))
	defer srv.Close()
	send := func(token uint64, sig string, signed bool) int {
		req, _ := http.NewRequest("POST", srv.URL, nil)
		if signed {
			fence.SetSignedHeaders(req, "billing", token, sig)
		} else {
			fence.SetHeaders(req, "billing", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send(7, k.Sign("billing", 7), true); code != http.StatusOK {
		t.Fatalf("the leader's signed token 7: %d", code)
	}
	other, _ := fence.NewKey([]byte("another key, not the resource's"))
	for _, forged := range []struct {
		name string
		sig  string
		sign bool
	}{
		{"no signature", "", false},
		{"empty signature", "", true},
		{"garbage", "deadbeef", true},
		{"another key's", other.Sign("billing", 1<<63), true},
		{"token 7's signature", k.Sign("billing", 7), true},
		{"another name's", k.Sign("payroll", 1<<63), true},
	} {
		if code := send(1<<63, forged.sig, forged.sign); code != http.StatusForbidden {
			t.Errorf("forged token with %s: %d, want 403", forged.name, code)
		}
	}
	if h := g.Highest("billing"); h != 7 {
		t.Fatalf("the fence moved to %d after forged tokens", h)
	}
	if code := send(7, k.Sign("billing", 7), true); code != http.StatusOK {
		t.Fatalf("the real leader's next write: %d, want 200", code)
	}
	if code := send(8, k.Sign("billing", 8), true); code != http.StatusOK || g.Highest("billing") != 8 {
		t.Fatalf("the next leader's write: %d, highest %d", code, g.Highest("billing"))
	}
	if served != 3 {
		t.Fatalf("served %d requests, want 3", served)
	}
}

func TestGuardSigned(t *testing.T) {
	k := testKey(t)
	g, _ := fence.NewSignedGuard(k)
	if err := g.Check("a", 5); !errors.Is(err, fence.ErrBadSignature) {
		t.Errorf("unsigned Check on a keyed guard: %v", err)
	}
	if err := g.CheckSigned("a", 0, k.Sign("a", 0)); !errors.Is(err, fence.ErrInvalidToken) {
		t.Errorf("token 0: %v", err)
	}
	if err := g.CheckSigned("a", 5, strings.ToUpper(k.Sign("a", 5))); err != nil {
		t.Errorf("valid signature in upper case: %v", err)
	}
	if _, err := fence.NewKey([]byte("short")); err == nil {
		t.Error("a 5-byte key accepted")
	}
	if _, err := fence.ParseKey("not hex"); err == nil {
		t.Error("a key that is not hex accepted")
	}
}

func TestCheckSignedTx(t *testing.T) {
	k := testKey(t)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "app.db")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	d, err := fence.SQLite.WithKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.CreateTable(ctx, db, d); err != nil {
		t.Fatal(err)
	}
	try := func(token uint64, sig string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := fence.CheckSignedTx(ctx, tx, d, "billing", token, sig); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := try(3, k.Sign("billing", 3)); err != nil {
		t.Fatal(err)
	}
	if err := try(1<<62, "forged"); !errors.Is(err, fence.ErrBadSignature) {
		t.Fatalf("forged token: %v", err)
	}
	tx, _ := db.BeginTx(ctx, nil)
	if err := fence.CheckTx(ctx, tx, d, "billing", 4); !errors.Is(err, fence.ErrBadSignature) {
		t.Fatalf("unsigned CheckTx with a keyed dialect: %v", err)
	}
	tx.Rollback()
	if err := try(3, k.Sign("billing", 3)); err != nil {
		t.Fatalf("the real leader after a forged token: %v", err)
	}
}

// docs/SECURITY.md, "a node": a key file that others can read (or write,
// or its group write) is refused with a one-line fix, as ssh refuses an
// exposed private key; 0600 and 0640 are accepted.
func TestReadKeyFileRefusesExposedFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows: mode bits do not describe who may read a file; ReadKeyFile does not check them")
	}
	path := filepath.Join(t.TempDir(), "fence.key")
	if err := os.WriteFile(path, []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
		says string
	}{
		{0o600, true, ""},
		{0o400, true, ""},
		{0o640, true, ""},
		{0o644, false, "readable by every user (mode 0644)"},
		{0o604, false, "readable by every user"},
		{0o602, false, "writable by every user"},
		{0o660, false, "writable by its group"},
		{0o601, false, "open to every user"},
		{0o666, false, "readable by every user and writable by every user and writable by its group"},
	} {
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		k, err := fence.ReadKeyFile(path)
		if c.ok {
			if err != nil || k == nil {
				t.Errorf("mode %04o: %v", c.mode, err)
			}
			continue
		}
		if !errors.Is(err, fence.ErrKeyFileExposed) || k != nil || !strings.Contains(err.Error(), c.says) ||
			!strings.Contains(err.Error(), "chmod 600 "+path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("mode %04o: %v, %v; want ErrKeyFileExposed saying %q and the fix, in one line", c.mode, k, err, c.says)
		}
	}
}
