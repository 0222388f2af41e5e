package etcd_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/etcd"
)

// tokenTTL is the life of an authentication token in TestAuthTokenExpiry:
// a JWT (etcd's simple tokens live on while they are used) shorter than
// the lease, so that tokens expire again and again within one term.
const tokenTTL = time.Second

// authCluster starts a member whose tokens are JWTs that expire after
// tokenTTL, with authentication enabled for the user root (password
// "first"), and returns it.
func authCluster(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	key := filepath.Join(t.TempDir(), "jwt.key")
	secret := make([]byte, 32)
	rand.Read(secret)
	if err := os.WriteFile(key, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	c := etcdtest.StartClusterWith(t, 1, func(cfg *embed.Config) {
		cfg.AuthToken = "jwt,priv-key=" + key + ",sign-method=HS256,ttl=" + tokenTTL.String()
		// Every new token costs the member a bcrypt of the password:
		// at the default cost, under the race detector, seconds.
		cfg.BcryptCost = 4 // bcrypt.MinCost
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := bg(t, 20*time.Second)
	if _, err := cli.UserAdd(ctx, "root", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// authClient returns a client of c that authenticates as root with
// password.
func authClient(t *testing.T, c *etcdtest.Cluster, password string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Username: "root", Password: password,
		Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestAuthTokenExpiry: a leader on a cluster with authentication, whose
// token expires every tokenTTL, four times over in one term. Its client
// authenticates again and the leader keeps renewing: the term lasts, its
// deadline moves on. Then its password is changed behind it, so that it
// can no longer authenticate: it steps down at its deadline, and Valid is
// never true after it.
func TestAuthTokenExpiry(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own cluster; mostly waits
	c := authCluster(t)
	prefix := freshPrefix(t)
	ctx := bg(t, 60*time.Second)
	st, err := etcd.FromClient(ctx, authClient(t, c, "first"), etcd.WithPrefix(prefix), etcd.WithRequestTimeout(reqTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := baton.New(st, "billing", baton.WithNode("a"), baton.WithLease(timing.Lease), baton.WithRenew(timing.Renew),
		baton.WithClockMargin(timing.Margin), baton.WithPoll(timing.Poll))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	term, err := e.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	won, start := term.Deadline(), time.Now()
	delay := testenv.MeasureDelay(t)
	feed := st.WatchChanges(ctx)
	// The tokens do expire: one taken now is refused once tokenTTL passed.
	token := rawToken(t, c)
	time.Sleep(tokenTTL + 200*time.Millisecond)
	if err := getWithToken(t, c, token); !errors.Is(rpctypes.Error(err), rpctypes.ErrInvalidAuthToken) {
		t.Fatalf("a read with a token %v old: %v, want %v", tokenTTL, err, rpctypes.ErrInvalidAuthToken)
	}

	// Four token lifetimes (one of them above): every renewal must go on.
	for end := time.Now().Add(3 * tokenTTL); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !term.Valid() {
			t.Fatalf("the term ended while tokens expired and were renewed: %v", term.Err())
		}
	}
	if d := term.Deadline(); d.Sub(won) < 4*tokenTTL-timing.Renew-timing.Slack {
		t.Fatalf("the deadline moved %v in %v of expiring tokens: the renewals stopped", d.Sub(won), 4*tokenTTL)
	}
	t.Logf("the term lasted %v of expiring tokens, renewed through %v", time.Since(start).Round(time.Millisecond), term.Deadline().Sub(won).Round(time.Millisecond))
	// The change feed, on a watch opened with the first token, still names
	// the renewals; if it closed, a new one does.
	rec, err := st.Get(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	wait := time.NewTimer(timing.Lease + 5*time.Second)
	defer wait.Stop()
	for named := false; !named; {
		select {
		case b, ok := <-feed:
			if !ok {
				t.Log("the change feed closed; watching again")
				feed = st.WatchChanges(ctx)
				time.Sleep(timing.Poll) // a feed that cannot start is closed at once: do not spin
				continue
			}
			for _, ch := range b {
				named = named || (ch.Name == "billing" && ch.Version >= rec.Version)
			}
		case <-wait.C:
			t.Fatalf("the change feed named no renewal at or after version %d, %v after the term began", rec.Version, time.Since(start))
		}
	}

	// The password changes: the leader's client cannot authenticate again.
	admin := authClient(t, c, "first")
	if _, err := admin.UserChangePassword(ctx, "root", "second"); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	last := term.Deadline()
	for term.Valid() {
		if time.Since(changed) > timing.Lease+10*time.Second {
			t.Fatalf("the leader still believes it leads %v after it lost its credentials (deadline %v ago)", time.Since(changed), time.Since(term.Deadline()))
		}
		last = term.Deadline()
		time.Sleep(10 * time.Millisecond)
	}
	seen := time.Now()
	if seen.After(last) && seen.Sub(last) > delay.Slack(timing.Slack, changed, seen) {
		t.Errorf("Valid said true until %v after the deadline it had", seen.Sub(last))
	}
	select {
	case <-term.Done():
	case <-time.After(timing.Slack + 5*time.Second):
		t.Fatalf("the term is not valid but has not ended")
	}
	if term.Valid() {
		t.Fatal("Valid is true again after the term ended")
	}
	t.Logf("after the password changed the term ended %v later (deadline then %v after the change): %v",
		seen.Sub(changed).Round(time.Millisecond), last.Sub(changed).Round(time.Millisecond), term.Err())
}

// rawToken authenticates as root on a client of its own and returns the
// token the member issued.
func rawToken(t *testing.T, c *etcdtest.Cluster) string {
	t.Helper()
	cli := plainClient(t, c)
	resp, err := cli.Authenticate(bg(t, 10*time.Second), "root", "first")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Token
}

// getWithToken reads a key with token and no credentials to get another.
func getWithToken(t *testing.T, c *etcdtest.Cluster, token string) error {
	t.Helper()
	cli := plainClient(t, c)
	ctx := metadata.AppendToOutgoingContext(bg(t, 10*time.Second), rpctypes.TokenFieldNameGRPC, token)
	_, err := cli.Get(ctx, "probe")
	return err
}

// plainClient returns a client of c without credentials.
func plainClient(t *testing.T, c *etcdtest.Cluster) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestAuthRefusedIsUnavailable: when the cluster refuses a handle's
// credentials (its password was changed behind it), every call fails with
// store.ErrUnavailable, an error that heals, on one line that says so,
// never store.ErrInvalid, which the library takes as the answer to a
// request that can never succeed (a run's outcome refused, a swap of a
// batch refused). When the password is set back, the same handle works
// again.
func TestAuthRefusedIsUnavailable(t *testing.T) {
	c := authCluster(t)
	ctx := bg(t, 60*time.Second)
	st, err := etcd.FromClient(ctx, authClient(t, c, "first"), etcd.WithPrefix(freshPrefix(t)), etcd.WithRequestTimeout(reqTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Swap(ctx, store.Swap{Record: acquire("billing", "a", 1), Event: store.Acquired})
	if err != nil {
		t.Fatal(err)
	}
	admin := authClient(t, c, "first")
	if _, err := admin.UserChangePassword(ctx, "root", "second"); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"renewal": func() error { _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); return err },
		"fenced run write": func() error {
			_, err := st.SwapRun(ctx, store.RunSwap{Run: store.Run{Job: "billing", Period: "p1", State: store.Running, Token: 1}, Fenced: true})
			return err
		},
		"read": func() error { _, err := st.Get(ctx, "billing"); return err },
	}
	for what, call := range calls {
		err := call()
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "credentials") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s with refused credentials: %v; want ErrUnavailable, not ErrInvalid, on one line naming the credentials", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	if _, err := authClient(t, c, "second").UserChangePassword(ctx, "root", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec}); err != nil {
		t.Fatalf("renewal once the password is back: %v", err)
	}
}
