package main

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// A token floor a baton store cannot follow with a next term is refused
// before the store is opened: exit 2, one line naming the largest floor.
func TestStoreFloorAboveMaximum(t *testing.T) {
	dir := t.TempDir()
	for _, tok := range []string{"9223372036854775807", "18446744073709551615", "18446744073709551616"} {
		path := filepath.Join(dir, "f.db")
		args := []string{"store", "floor", "--store", "sqlite:" + path, "j", tok}
		code, _, errOut := runBaton(t, args...)
		checkOneLine(t, args, code, errOut, "TOKEN "+tok, "at most 9223372036854775806")
		if _, err := storeurl.OpenReadOnly(context.Background(), "sqlite:"+path); err == nil {
			t.Errorf("%v created a store", args)
		}
	}
	// The largest floor is taken: its next leader gets the largest token.
	args := []string{"store", "floor", "--store", "sqlite:" + filepath.Join(dir, "ok.db"), "j", "9223372036854775806"}
	if code, out, errOut := runBaton(t, args...); code != exitOK || !strings.Contains(out, "next leader gets token 9223372036854775807") {
		t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
}

// A store whose record is at the largest token ends 'baton run', in each
// mode, on every backend: exit 1 with one line on the first acquisition,
// no retry loop. The renew interval is 10s: the process must end well
// within it.
func TestRunTokenLimitEnds(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store and files
	for _, b := range []struct {
		name string
		url  func(t *testing.T) (string, *env)
	}{
		{"mem", func(t *testing.T) (string, *env) {
			e, _, _, _ := shared()
			return "mem:", e
		}},
		{"sqlite", func(t *testing.T) (string, *env) {
			return "sqlite:" + filepath.Join(t.TempDir(), "s.db"), nil
		}},
		{"postgres", func(t *testing.T) (string, *env) {
			return pgtest.Start(t), nil
		}},
		{"etcd", func(t *testing.T) (string, *env) {
			c := etcdtest.StartCluster(t, 1)
			return "etcd://" + c.Endpoint(0) + "?prefix=/" + url.PathEscape(t.Name()) + "/", nil
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			u, e := b.url(t)
			if e == nil {
				e = &env{}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			st, err := e.openStore(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Swap(ctx, store.Swap{Record: store.Record{Name: "j", Token: store.MaxToken}, Event: store.FloorRaised})
			st.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range [][]string{{}, {"--once"}, {"--every", "1m"}} {
				args := append(append([]string{"run", "--store", u, "--lease", "30s"}, mode...), "j", "--", "true")
				out, errb := &syncBuffer{}, &syncBuffer{}
				e.stdout, e.stderr = out, errb
				rctx, stop := context.WithTimeout(ctx, 20*time.Second)
				start := time.Now()
				code := e.run(rctx, args)
				took := time.Since(start)
				stop()
				t.Logf("%v: exit %d after %v", mode, code, took.Round(time.Millisecond))
				var final []string
				for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
					if strings.HasPrefix(l, "baton run: ") {
						final = append(final, l)
					}
				}
				switch {
				case code != exitFailure:
					t.Errorf("%v: exit %d, want %d\n%s", args, code, exitFailure, errb)
				case took >= 10*time.Second:
					t.Errorf("%v: took %v, the renew interval or more", args, took)
				case len(final) != 1 || !strings.Contains(final[0], "fencing tokens used up") || !strings.Contains(final[0], "9223372036854775807"):
					t.Errorf("%v: want one line naming the used-up tokens, got:\n%s", args, errb)
				case strings.Contains(errb.String(), "store write failed"):
					t.Errorf("%v: retried the refused write:\n%s", args, errb)
				}
			}
		})
	}
}

// A write refused by a constraint that baton did not make (here a trigger
// in the SQLite file) will not heal: 'baton run' ends with exit 1 and one
// line instead of retrying.
func TestRunConstraintEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	code, _, errOut := runBaton(t, "store", "floor", "--store", "sqlite:"+path, "j", "5")
	if code != exitOK {
		t.Fatal(errOut)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TRIGGER no_takeover BEFORE UPDATE ON baton_election BEGIN SELECT RAISE(ABORT, 'not today'); END`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	code = (&env{stdout: out, stderr: errb}).run(ctx, []string{"run", "--store", "sqlite:" + path, "--lease", "30s", "j", "--", "true"})
	last := strings.TrimSpace(errb.String())
	last = last[strings.LastIndexByte(last, '\n')+1:]
	if code != exitFailure || !strings.HasPrefix(last, "baton run: ") || !strings.Contains(last, "constraint") || strings.Contains(errb.String(), "store write failed") {
		t.Fatalf("exit %d, want %d with one line naming the constraint, no retry:\n%s", code, exitFailure, errb)
	}
}
