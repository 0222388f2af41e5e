package inspect

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

func TestStateOf(t *testing.T) {
	t0 := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	lease := 15 * time.Second
	direct := store.Record{Name: "n", Holder: "a", Incarnation: "a-1", Token: 4, Lease: lease, Version: 9, Updated: t0}
	viaSess := store.Record{Name: "n", Holder: "a", Incarnation: "a-1", Token: 4, Lease: lease, Session: "@session/a-1", Version: 3, Updated: t0.Add(-time.Hour)}
	sess := store.Record{Name: "@session/a-1", Holder: "a", Incarnation: "a-1", Lease: lease, Version: 77, Updated: t0}
	ended := sess
	ended.Holder, ended.Incarnation = "", ""
	other := sess
	other.Incarnation = "a-2"
	for _, c := range []struct {
		name  string
		rec   store.Record
		sess  *store.Record
		now   time.Time
		state string
		left  time.Duration
	}{
		{"free", store.Record{Name: "n", Token: 3}, nil, t0, Free, 0},
		{"held directly", direct, nil, t0.Add(5 * time.Second), Held, 10 * time.Second},
		{"held directly at the lease", direct, nil, t0.Add(lease), Held, 0},
		{"store clock behind the write", direct, nil, t0.Add(-time.Second), Held, lease},
		{"direct, silent past the lease", direct, nil, t0.Add(lease + time.Millisecond), ProbablyDead, 0},
		{"held through a session", viaSess, &sess, t0.Add(time.Second), Held, 14 * time.Second},
		{"session silent past the lease", viaSess, &sess, t0.Add(time.Minute), ProbablyDead, 0},
		{"session released", viaSess, &ended, t0, SessionEnded, 0},
		{"session gone", viaSess, nil, t0, SessionEnded, 0},
		{"session of another incarnation", viaSess, &other, t0, SessionEnded, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := StateOf(c.rec, c.sess, c.now)
			if s.State != c.state || s.LeaseLeft != c.left || s.Token != c.rec.Token {
				t.Fatalf("StateOf: %+v; want %s with %v left, token %d", s, c.state, c.left, c.rec.Token)
			}
			if (s.LeaseLeftSeconds != nil) != (c.state == Held) {
				t.Fatalf("lease left %v in state %s", s.LeaseLeftSeconds, s.State)
			}
			if c.state == Held && c.sess != nil && (s.RenewalVersion != c.sess.Version || s.RenewalRecord != c.sess.Name) {
				t.Fatalf("renewals are %s@%d; want the session's", s.RenewalRecord, s.RenewalVersion)
			}
			if s.Describe() == "" {
				t.Fatal("no description")
			}
		})
	}
}

// A held record whose lease no valid configuration writes, or whose token
// has no successor, is shown damaged: the views say no contender will
// take it over, as the election machine decides.
func TestStateOfDamagedRecord(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		rec  store.Record
		want string
	}{
		{store.Record{Name: "j", Holder: "x", Lease: math.MaxInt64, Token: 3, Updated: now}, "lease"},
		{store.Record{Name: "j", Holder: "x", Lease: -1, Token: 3, Updated: now}, "lease"},
		{store.Record{Name: "j", Holder: "x", Lease: 15 * time.Second, Token: math.MaxInt64, Updated: now}, "token"},
		{store.Record{Name: "j", Holder: "x", Lease: 15 * time.Second, Token: 3, Updated: now}, ""},
	} {
		s := StateOf(tc.rec, nil, now)
		switch {
		case tc.want == "" && s.Damaged != "":
			t.Errorf("%+v: damaged %q", tc.rec, s.Damaged)
		case tc.want != "" && (!strings.Contains(s.Damaged, tc.want) || !strings.Contains(s.Describe(), "DAMAGED")):
			t.Errorf("%+v: damaged %q, describe %q; want it named %s", tc.rec, s.Damaged, s.Describe(), tc.want)
		}
	}
}
