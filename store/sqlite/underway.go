package sqlite

import (
	"context"
	"sync"
	"sync/atomic"
)

// localWrites counts, per file, the writes of this process's Stores that
// hold their write turn (see Store.takeTurn): the commits that may be
// under way in this process, which the test of the file's write lock
// (shmProbe) cannot see, since a process never conflicts with its own
// POSIX locks. An entry stays for the life of the process: a counter per
// file opened, back at zero whenever no write to it is under way.
var localWrites sync.Map // fileID -> *atomic.Int64

// localWriters returns the counter of the writes under way in this
// process to the file id.
func localWriters(id fileID) *atomic.Int64 {
	if c, ok := localWrites.Load(id); ok {
		return c.(*atomic.Int64)
	}
	c, _ := localWrites.LoadOrStore(id, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// takeTurn waits for the Store's write turn (urgent: see turn) and
// counts the write as under way until the returned function, which
// gives the turn back, is called. It fails only with ctx's error.
func (s *Store) takeTurn(ctx context.Context, urgent bool) (done func(), err error) {
	if err := s.writing.acquire(ctx, urgent); err != nil {
		return nil, err
	}
	s.local.Add(1)
	return func() {
		s.local.Add(-1)
		s.writing.release()
	}, nil
}

// commitUnderway reports whether a commit to the file may be under way:
// a write of a Store of this process holds its write turn, or another
// process holds the file's write lock (p; true when that cannot be
// known). When it reports false, every commit whose pages were written
// to the log before the call, by a Store of this process or by another
// process, is published, visible to a poll that starts after it: a
// writer holds the lock from before it writes the log until after it
// publishes the commit. A commit of another SQLite connection of this
// process, not a Store's, is not seen: the periodic poll finds it.
func (s *Store) commitUnderway(p *shmProbe) bool {
	return s.local.Load() > 0 || p.foreignWriter()
}
