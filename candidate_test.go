package baton_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

func candidates(t *testing.T, st store.Store) map[string]store.Candidate {
	t.Helper()
	cs, err := st.Candidates(context.Background(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Candidate{}
	for _, c := range cs {
		out[c.Node] = c
	}
	return out
}

// A node waiting in Campaign keeps a candidate row fresh, with few writes;
// the row goes when it wins or stops campaigning, and goes stale when it
// dies without a word.
func TestCandidateRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(memstore.WithTime(time.Now))
		a := newElector(t, st.Client("a"), "a")
		b := newElector(t, st.Client("b"), "b", baton.WithIncarnation("b-1"))
		ta := mustCampaign(t, a)
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		bc := campaign(ctx, b)
		time.Sleep(time.Minute)
		synctest.Wait()
		cs := candidates(t, st)
		c, ok := cs["b"]
		if len(cs) != 1 || !ok || c.Incarnation != "b-1" || c.Every != baton.CandidateEvery*poll || c.Stale() {
			t.Fatalf("candidates while b waits: %+v", cs)
		}
		if !c.Since.Equal(start) || c.Age >= c.Every {
			t.Errorf("b since %v (campaign began %v), last seen %v ago, every %v", c.Since, start, c.Age, c.Every)
		}

		// b stops waiting: its row goes.
		cancel()
		<-bc
		synctest.Wait()
		if cs := candidates(t, st); len(cs) != 0 {
			t.Fatalf("candidates after b stopped: %+v", cs)
		}

		// b waits again and wins when a resigns: its row goes.
		bc = campaign(t.Context(), b)
		time.Sleep(time.Second)
		if _, ok := candidates(t, st)["b"]; !ok {
			t.Fatal("b waits again without a row")
		}
		if err := ta.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		w := <-bc
		if w.Err != nil {
			t.Fatal(w.Err)
		}
		synctest.Wait()
		if cs := candidates(t, st); len(cs) != 0 {
			t.Fatalf("candidates after b won: %+v", cs)
		}

		// a waits, then its process dies (its store calls fail forever):
		// the row stays but goes stale after StaleAfter missed refreshes.
		ac := campaign(t.Context(), a)
		time.Sleep(time.Second)
		st.SetUnreachable("a", true)
		time.Sleep(time.Duration(store.StaleAfter+1) * baton.CandidateEvery * poll)
		c, ok = candidates(t, st)["a"]
		if !ok || !c.Stale() {
			t.Fatalf("a's row after it went silent: %+v (present %v)", c, ok)
		}
		st.SetUnreachable("a", false)
		if err := w.Term.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if w := <-ac; w.Err != nil {
			t.Fatal(w.Err)
		}
	})
}
