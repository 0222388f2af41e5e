package explore

import (
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/election"
)

type cloneView struct{ deadline time.Time }

type cloneEntry struct {
	n    int
	view *cloneView // points into the root's field
	tags []string
}

type cloneTimer struct {
	at int
	e  *cloneEntry
}

type cloneRoot struct {
	names  map[string]*cloneEntry
	timers []cloneTimer
	view   cloneView
	flag   bool
	feed   *bool // points into the root's field
	any    any
	clock  func() time.Time
}

// deepCopy copies every reference, keeps two pointers to one object
// pointing to one copy, and a pointer into a field of the root pointing
// into the copy's field: the shapes an election.Group has (its timers
// and its names map share entries, its machines point at its session
// view, its observers at its feed flag).
func TestDeepCopyKeepsTheShape(t *testing.T) {
	r := &cloneRoot{names: map[string]*cloneEntry{}, clock: time.Now}
	r.feed = &r.flag
	e := &cloneEntry{n: 1, view: &r.view, tags: []string{"a"}}
	r.names["billing"] = e
	r.timers = []cloneTimer{{at: 5, e: e}}
	r.any = &cloneEntry{n: 2}
	r.view.deadline = t0

	c := deepCopy(r)
	if !reflect.DeepEqual(stripFunc(*r), stripFunc(*c)) {
		t.Fatalf("the copy differs: %+v, %+v", r, c)
	}
	ce := c.names["billing"]
	switch {
	case ce == e:
		t.Fatal("an entry is shared with the original")
	case c.timers[0].e != ce:
		t.Fatal("the timer and the map point to two copies of one entry")
	case ce.view != &c.view:
		t.Fatal("the entry's view does not point into the copy's field")
	case c.feed != &c.flag:
		t.Fatal("the feed pointer does not point into the copy's field")
	case c.any.(*cloneEntry) == r.any.(*cloneEntry):
		t.Fatal("an interface's pointer is shared")
	}
	ce.n, ce.tags[0], c.view.deadline, *c.feed = 9, "b", t0.Add(time.Hour), true
	if e.n != 1 || e.tags[0] != "a" || !r.view.deadline.Equal(t0) || r.flag {
		t.Fatalf("a change to the copy changed the original: %+v %+v", e, r)
	}
}

func stripFunc(r cloneRoot) cloneRoot { r.clock = nil; return r }

// A real Group in session mode: its copy hashes as it does, and stepping
// the copy leaves the original's hash as it was.
func TestDeepCopyOfAGroup(t *testing.T) {
	c, _ := Lookup("group-2x1")
	w := newWorld(&c, nil)
	if _, err := w.settle(); err != nil {
		t.Fatal(err)
	}
	g := w.nodes[1].g
	x := &hasher{}
	before := machineKey(x, g)
	cp := deepCopy(g)
	if machineKey(x, cp) != before {
		t.Fatal("the copy of a Group hashes differently")
	}
	cp.Step(w.local(1, 2*time.Second), election.Tick{})
	if machineKey(x, g) != before {
		t.Fatal("stepping the copy changed the original Group")
	}
	if machineKey(x, cp) == before {
		t.Fatal("a tick two seconds on changed nothing in the copy (the test shows nothing)")
	}
}

// A Group configuration refuses what its runtime does not drive.
func TestGroupConfigValidate(t *testing.T) {
	c, _ := Lookup("group-2x1")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Writes = 1 },
		func(c *Config) { c.Work = &Work{Period: time.Second, Poll: time.Second} },
		func(c *Config) { c.Group = &Sessions{} },
	} {
		cc := c
		bad(&cc)
		if err := cc.Validate(); err == nil {
			t.Errorf("%+v: validated", cc)
		}
	}
}
