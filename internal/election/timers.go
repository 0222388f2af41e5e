// The Group's bookkeeping: the set of names that await a session, and the
// names' timers.

package election

import (
	"slices"
	"time"
)

// waitSet is the names that await one session: a set kept in an order of
// its own (the order the names began to wait, each removal filled by the
// last name), so that the group's actions come in the same order on every
// run without sorting the names (for the 100,000 names of a bulk
// takeover, a sort costs about 20 ms before the first swap can go out).
type waitSet struct {
	names []string
	at    map[string]int // index of each name in names, once past 8 (nil before)
}

// index returns the index of name in names, if it is there: found by a
// scan while there are few (the names of one node held through one
// session, most often), in at once there are more.
func (w *waitSet) index(name string) (int, bool) {
	if w.at == nil {
		for i, n := range w.names {
			if n == name {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := w.at[name]
	return i, ok
}

func (w *waitSet) add(name string) {
	if _, ok := w.index(name); ok {
		return
	}
	if w.at == nil && len(w.names) == 8 {
		w.at = make(map[string]int, 16)
		for i, n := range w.names {
			w.at[n] = i
		}
	}
	if w.at != nil {
		w.at[name] = len(w.names)
	}
	w.names = append(w.names, name)
}

func (w *waitSet) remove(name string) {
	i, ok := w.index(name)
	if !ok {
		return
	}
	last := len(w.names) - 1
	w.names[i] = w.names[last]
	if w.at != nil {
		w.at[w.names[i]] = i
		delete(w.at, name)
	}
	w.names[last] = ""
	w.names = w.names[:last]
}

// len is the number of names; 0 for a nil set.
func (w *waitSet) len() int {
	if w == nil {
		return 0
	}
	return len(w.names)
}

// list returns the names in the set's order; nil for a nil set.
func (w *waitSet) list() []string {
	if w == nil {
		return nil
	}
	return w.names
}

// sortedKeys returns m's keys in order: the group's actions come in the
// same order on every run, so that a simulated run replays exactly.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// timer is a name's timer: its entry, g.names[e.name], which stays the
// name's for the group's life.
type timer struct {
	at time.Time
	e  *entry
}

// timerHeap is a min-heap of timers by instant. Typed rather than
// container/heap, whose interface boxes every timer pushed or popped: the
// algorithm is container/heap's own, step for step, so that timers due at
// one instant come out in the same order as before.
type timerHeap []timer

// less is h[i].at.Before(h[j].at), answered at once for timers at one
// instant alike to the bit (names that poll together): Before is a call.
func (h timerHeap) less(i, j int) bool { return h[i].at != h[j].at && h[i].at.Before(h[j].at) }

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	q := *h
	for j := len(q) - 1; ; {
		i := (j - 1) / 2 // parent
		if i == j || !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *timerHeap) pop() timer {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && q.less(j2, j1) {
			j = j2
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	t := q[n]
	q[n] = timer{}
	*h = q[:n]
	return t
}

// reached reports whether now is at or past at, !now.Before(at), answered
// at once when the two are alike to the bit (a tick at the instant a
// timer asked for, most often): Before is a call.
func reached(now, at time.Time) bool { return now == at || !now.Before(at) }

// sameInstant is a.Equal(b), answered at once when a and b are alike to
// the bit (a timer's instant and its entry's due, most often): Equal is a
// call, and the Group asks it of every timer it looks at.
func sameInstant(a, b time.Time) bool { return a == b || a.Equal(b) }
