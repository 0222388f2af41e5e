package sqlite

import (
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// The batches a bulk takeover sends go the one-statement way (takeTx);
// any other batch the general one.
func TestTakesChoosesTheBatches(t *testing.T) {
	take := func(name string, expect int64) store.Swap {
		return store.Swap{Expect: expect, Event: store.TakenOver, Record: store.Record{Name: name, Holder: "n2", Incarnation: "i2",
			Session: store.SessionPrefix + "n2/i2/1", Token: 3, Lease: 3 * time.Second}}
	}
	other := take("c", 4)
	other.Record.Holder = "n3"
	renewal := take("c", 4)
	renewal.Event = ""
	session := take(store.SessionPrefix+"n9/i9/1", 4)
	session.Record.Session = ""
	for _, c := range []struct {
		why   string
		swaps []store.Swap
		want  bool
	}{
		{"a takeover", []store.Swap{take("a", 1), take("b", 2), take("c", 9)}, true},
		{"one swap", []store.Swap{take("a", 1)}, false},
		{"a name twice", []store.Swap{take("a", 1), take("a", 2)}, false},
		{"a creation", []store.Swap{take("a", 1), take("b", 0)}, false},
		{"another holder", []store.Swap{take("a", 1), other}, false},
		{"a renewal", []store.Swap{take("a", 1), renewal}, false},
		{"a session record", []store.Swap{take("a", 1), session}, false},
	} {
		if got := takes(c.swaps); got != c.want {
			t.Errorf("%s: takes = %v, want %v", c.why, got, c.want)
		}
	}
}
