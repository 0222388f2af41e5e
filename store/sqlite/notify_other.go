//go:build !linux

package sqlite

// walNotifier is inotify's wake-up of the change-feed poller, on Linux
// only; elsewhere the poll alone serves.
type walNotifier struct{ C chan struct{} }

func newWALNotifier(string) *walNotifier { return nil }

func (*walNotifier) rearm() {}

func (*walNotifier) watched() bool { return false }

// Close stops the notifier.
func (*walNotifier) Close() {}

// shmProbe would test the write lock of the store's -shm file; where the
// change feed is not woken by writes (see notify_linux.go) nothing asks.
type shmProbe struct{}

func newSHMProbe(string) *shmProbe { return &shmProbe{} }

// foreignWriter reports that a commit may be under way: always, here.
func (*shmProbe) foreignWriter() bool { return true }
