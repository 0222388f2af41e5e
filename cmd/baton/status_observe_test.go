package main

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton/store"
)

// status --observe watches the record on this process's clock (virtual
// here) and reports the lease remaining as seen from here.
func TestStatusObserve(t *testing.T) {
	for _, tc := range []struct {
		name   string
		renew  bool
		wants  []string
		absent string
	}{
		{"renewing", true, []string{"renewed ", "lease remaining at most "}, "no renewal"},
		{"silent", false, []string{"no renewal seen in 1s of watching", "lease remaining at most 2s"}, "renewed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, out, errb, ms := shared()
				ctx := context.Background()
				rec, err := ms.Swap(ctx, store.Swap{Record: store.Record{Name: "billing", Holder: "a", Incarnation: "a1", Token: 3, Lease: 3 * time.Second}, Event: store.Acquired})
				if err != nil {
					t.Fatal(err)
				}
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() { // a leader renewing every 100ms, or not at all
					defer close(done)
					for tc.renew {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
						rec, _ = ms.Swap(ctx, store.Swap{Expect: rec.Version, Record: rec})
					}
				}()
				code := e.run(ctx, []string{"status", "--store", "mem:", "--observe", "1s", "billing"})
				close(stop)
				<-done
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				for _, w := range tc.wants {
					if !strings.Contains(out.String(), w) {
						t.Errorf("output lacks %q:\n%s", w, out.String())
					}
				}
				if strings.Contains(out.String(), tc.absent) {
					t.Errorf("output has %q:\n%s", tc.absent, out.String())
				}
			})
		})
	}
	e, _, errb, _ := shared()
	if code := e.run(context.Background(), []string{"status", "--store", "mem:", "--observe", "-1s", "billing"}); code != exitUsage {
		t.Fatalf("negative --observe: exit %d (%s)", code, errb.String())
	}
}
