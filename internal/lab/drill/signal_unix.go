//go:build unix

package drill

import (
	"os"
	"os/signal"
	"syscall"
)

// procsSupported returns nil: Unix has the signals the process drill's
// faults are made of.
func procsSupported() error { return nil }

// stopSelf calls said, then stops this process (SIGSTOP) and returns once
// it got SIGCONT. kill(2) on itself returns before the stop takes hold:
// the wait for SIGCONT makes sure nothing runs in between.
func stopSelf(said func()) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	said()
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}

// resume sends SIGCONT to p, should it be stopped.
func resume(p *os.Process) { p.Signal(syscall.SIGCONT) }
