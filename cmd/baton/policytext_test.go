package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// status, next and serve show a job's catch-up policy in the same words,
// its cap included: baton run's default (all, max 100), and an older
// baton's description that left the policy implicit.
func TestCatchUpPolicyShownAlike(t *testing.T) {
	every, err := schedule.Every(time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stored, want string }{
		{schedule.Describe(every, schedule.Policy{CatchUp: schedule.CatchUpAll, Max: schedule.DefaultCatchUpMax}), "all, max 100"},
		{schedule.Describe(every, schedule.Policy{CatchUp: schedule.CatchUpLatest, Window: time.Hour, Max: 7}), "latest, window 1h0m0s, max 7"},
		{"every 1h0m0s", "all"}, // stored by an older baton
	} {
		ms := memstore.New()
		st := ms.Client("")
		if _, err := st.EnsureJob(t.Context(), store.Job{Name: "billing", Schedule: tc.stored}); err != nil {
			t.Fatal(err)
		}
		cmd := func(args ...string) string {
			var out, errb strings.Builder
			e := &env{stdout: &out, stderr: &errb, open: func(context.Context, string) (store.Store, error) { return ms.Client(""), nil }}
			if code := e.run(context.Background(), append(args, "--store", "mem:")); code != exitOK {
				t.Fatalf("baton %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
			}
			return out.String()
		}
		if s := cmd("status", "billing"); !strings.Contains(s, "\ncatch-up:  "+tc.want+"\n") {
			t.Errorf("stored %q: status shows\n%s\nwant catch-up:  %s", tc.stored, s, tc.want)
		}
		if s := cmd("next", "billing"); !strings.HasPrefix(s, "schedule:  every 1h0m0s; catch-up "+tc.want+"\n") {
			t.Errorf("stored %q: next shows\n%s\nwant catch-up %s", tc.stored, s, tc.want)
		}
		srv, err := newServer(st, "mem:", nil, time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.routes())
		_, page := get(t, hs.URL+"/fragment?name=billing")
		hs.Close()
		if !strings.Contains(page, `<dd class="schedule">every 1h0m0s; catch-up `+tc.want+`</dd>`) {
			t.Errorf("stored %q: serve's page does not show catch-up %s:\n%s", tc.stored, tc.want, page)
		}
	}
}
