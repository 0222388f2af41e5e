package electortest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/fence"
)

// Guarded is a Resource in the test process: a fence.Guard shared by every
// node, whichever side of a partition it is on, so that a node that should
// not act would be seen acting.
type Guarded struct {
	guard *fence.Guard

	mu      sync.Mutex
	applied []Write
	refused int
}

// NewGuarded returns an empty in-process resource.
func NewGuarded() *Guarded { return &Guarded{guard: fence.NewGuard()} }

// Write implements Resource: the guard checks the token and records the
// write in one critical section, so Applied is in the guard's order.
func (g *Guarded) Write(_ context.Context, node string, token uint64, period string) error {
	err := g.guard.Do(Name, token, func() error {
		g.mu.Lock()
		g.applied = append(g.applied, Write{Node: node, Token: token, Period: period, At: time.Now()})
		g.mu.Unlock()
		return nil
	})
	if errors.Is(err, fence.ErrStaleToken) {
		g.mu.Lock()
		g.refused++
		g.mu.Unlock()
	}
	return err
}

// Applied implements Resource.
func (g *Guarded) Applied(context.Context) ([]Write, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.applied), nil
}

// Refused returns how many writes the guard refused as stale.
func (g *Guarded) Refused() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

// Sampler samples Valid() of a set of nodes every few milliseconds until
// halted, and records every sample that was true.
type Sampler struct {
	stop    chan struct{}
	done    chan struct{}
	samples int
	valid   []string // "node token at"
}

// Sample starts sampling nodes every interval.
func Sample(nodes []*Node, every time.Duration) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			for _, n := range nodes {
				s.samples++
				if rec, ok := n.Valid(); ok {
					s.valid = append(s.valid, fmt.Sprintf("%s token %d at %s", n.ID, rec.Term.Token(), time.Now().Format("15:04:05.000")))
				}
			}
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
	return s
}

// Halt stops the sampler and returns the number of samples and the true
// ones.
func (s *Sampler) Halt() (int, []string) {
	close(s.stop)
	<-s.done
	return s.samples, s.valid
}
