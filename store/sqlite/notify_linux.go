package sqlite

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// walNotifier wakes the change-feed poller when the store's write-ahead
// log is written, by any process on this host: every commit appends its
// pages to the -wal file, and inotify reports each write to it
// (IN_MODIFY) without a poll. It is a hint: the poller still reads
// data_version to know whether a commit landed, and keeps its periodic
// poll as the fallback (a watch that could not be set, a file on a
// network file system where inotify sees only this host's writes).
type walNotifier struct {
	f    *os.File // the inotify instance, non-blocking: Close ends read
	fd   int      // f's descriptor (f.Fd would make it blocking)
	path string
	// C receives a value, without blocking the reader, after writes to the
	// log; several writes before the poller looks give one value.
	C chan struct{}

	mu       sync.Mutex
	watching bool // a watch on path is set: wd
	wd       int
	closed   bool
	done     chan struct{}
}

// newWALNotifier starts watching path, the -wal file. It returns nil when
// inotify cannot be had (the poll alone serves then); a file that does
// not exist yet is watched once it does (see rearm).
func newWALNotifier(path string) *walNotifier {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	n := &walNotifier{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, path: path, C: make(chan struct{}, 1), done: make(chan struct{})}
	n.rearm()
	go n.read()
	return n
}

// mask is what the watch reports: writes, and the end of the file the
// watch names (deleted, moved, replaced), after which rearm sets it again
// on the file the path names then.
const mask = unix.IN_MODIFY | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// rearm sets the watch if none is set; the poller calls it at every
// periodic poll, a failed system call at most every watch interval while
// the file does not exist.
func (n *walNotifier) rearm() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watching || n.closed {
		return
	}
	if wd, err := unix.InotifyAddWatch(n.fd, n.path, mask); err == nil {
		n.watching, n.wd = true, wd
		// A commit between the file's creation and the watch is not
		// reported: wake the poller once.
		n.wake()
	}
}

// watched reports whether the watch is set: every write to the log wakes
// the poller.
func (n *walNotifier) watched() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.watching && !n.closed
}

func (n *walNotifier) wake() {
	select {
	case n.C <- struct{}{}:
	default:
	}
}

// read reads the instance's events until Close.
func (n *walNotifier) read() {
	defer close(n.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		k, err := n.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			continue // EINTR and the like
		}
		lost := false
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_Q_OVERFLOW) != 0 {
				lost = true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
		if lost {
			n.mu.Lock()
			if n.watching && !n.closed {
				// A moved file's watch follows it: remove it. One
				// the kernel dropped already fails harmlessly.
				unix.InotifyRmWatch(n.fd, uint32(n.wd))
			}
			n.watching = false
			n.mu.Unlock()
		}
		n.wake()
	}
}

// Close stops the notifier.
func (n *walNotifier) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.f.Close()
	<-n.done
}

// walWriteLockOffset is the byte of the -shm file that SQLite's write
// lock on a WAL database locks (WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK: the
// two copies of the index header, 48 bytes each, and the checkpoint
// information, 24, come first). A writer holds it from before it writes
// a commit's pages to the log until after it has published the commit in
// the index (and while it writes nothing: between BEGIN IMMEDIATE and
// its commit).
const walWriteLockOffset = 120

// shmProbe tests whether another process holds the write lock of the
// store's -shm file (fcntl F_GETLK), through a descriptor of that file
// that SQLite's connections in this process hold open. It opens none of
// its own: closing a descriptor of a file releases every POSIX lock the
// process holds on it, SQLite's included. (Reading the host's lock
// table, /proc/locks, instead takes a lock that waits for an RCU grace
// period, milliseconds, during which every file lock call of the host
// waits.) A process's own locks never conflict with it: a Store counts
// this process's writes itself (localWriters). The probe is the
// poller's, used by one goroutine.
type shmProbe struct {
	path     string
	fd       int // the descriptor found, or -1
	dev, ino uint64
}

func newSHMProbe(path string) *shmProbe { return &shmProbe{path: path, fd: -1} }

// foreignWriter reports whether another process holds the write lock, or
// whether that cannot be known (true then: no descriptor of the file is
// open in this process, or a system call failed).
func (p *shmProbe) foreignWriter() bool {
	if !p.valid() && !p.find() {
		return true
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: walWriteLockOffset, Len: 1}
	if err := unix.FcntlFlock(uintptr(p.fd), unix.F_GETLK, &lk); err != nil {
		p.fd = -1
		return true
	}
	return lk.Type != unix.F_UNLCK
}

// valid reports whether the descriptor found still names the file
// (SQLite may have closed it, and the number been reused).
func (p *shmProbe) valid() bool {
	if p.fd < 0 {
		return false
	}
	var st unix.Stat_t
	if unix.Fstat(p.fd, &st) != nil || uint64(st.Dev) != p.dev || st.Ino != p.ino { //nolint:unconvert // Dev's type differs by platform
		p.fd = -1
		return false
	}
	return true
}

// find looks for a descriptor of the file among this process's.
func (p *shmProbe) find() bool {
	var want unix.Stat_t
	if unix.Stat(p.path, &want) != nil {
		return false
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			p.fd, p.dev, p.ino = fd, uint64(st.Dev), st.Ino //nolint:unconvert // Dev's type differs by platform
			return true
		}
	}
	return false
}
