//go:build unix

package main

// 'baton run' and job control: a stopped baton cannot renew its lease nor
// stop its command; the command's supervisor then stops the command by
// the lease deadline (package supervise), but the node is out of the
// election all the same. So job-control signals never stop 'baton run'.

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// holdJobControl keeps job-control signals from stopping this process
// until the returned function is called:
//
//   - SIGTSTP (Ctrl-Z) is caught and logged, and does nothing else. Not
//     treated as SIGTERM: whoever presses Ctrl-Z means "pause", not "hand
//     the job to another node"; Ctrl-C does that.
//   - SIGTTIN and SIGTTOU are ignored: caught instead, a write to the
//     terminal from the background (with stty tostop) would be retried
//     after each signal, for ever; ignored, it goes through, and a read
//     (baton reads none) fails. The supervisor resets them to their
//     default for the command.
//
// SIGSTOP cannot be caught: the supervisor's deadline covers it.
func holdJobControl(log *slog.Logger) (restore func()) {
	signal.Ignore(syscall.SIGTTIN, syscall.SIGTTOU)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTSTP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				log.Warn("job-control signal ignored", "signal", "SIGTSTP",
					"why", "a stopped baton would leave its command running past its lease; Ctrl-C or SIGTERM stops the command, releases the lease and exits")
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		signal.Reset(syscall.SIGTTIN, syscall.SIGTTOU)
	}
}
