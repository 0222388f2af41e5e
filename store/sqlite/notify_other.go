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
