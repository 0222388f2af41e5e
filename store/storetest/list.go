package storetest

import (
	"slices"
	"testing"

	"github.com/batonhq/baton/store"
)

// RunLister checks a backend's store.Lister: every name with an election
// record or a registered job, sorted, each once. The backend must
// implement store.Lister.
func RunLister(t *testing.T, f Factory) {
	t.Run("Names", func(t *testing.T) {
		open := f(t)
		s := open()
		t.Cleanup(func() { s.Close() })
		l, ok := s.(store.Lister)
		if !ok {
			t.Fatalf("%T does not implement store.Lister", s)
		}
		names, err := l.Names(ctx(t))
		if err != nil || len(names) != 0 {
			t.Fatalf("Names of an empty store: %q, %v", names, err)
		}
		mustSwap(t, s, store.Swap{Record: acquire("b/election", "n1", 1), Event: store.Acquired})
		mustSwap(t, s, store.Swap{Record: acquire("a job", "n1", 1), Event: store.Acquired})
		for _, j := range []string{"a job", "c-job"} {
			if _, err := s.EnsureJob(ctx(t), store.Job{Name: j, Schedule: "every 1h"}); err != nil {
				t.Fatal(err)
			}
		}
		names, err = l.Names(ctx(t))
		if want := []string{"a job", "b/election", "c-job"}; err != nil || !slices.Equal(names, want) {
			t.Fatalf("Names: %q, %v; want %q", names, err, want)
		}
	})
}
