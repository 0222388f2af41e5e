//go:build windows

package drill

import (
	"errors"
	"os"
)

// procsSupported says that the process drill needs Unix: its faults stop
// and resume node processes with SIGSTOP and SIGCONT, which Windows lacks.
func procsSupported() error {
	return errors.New("the process drill (--procs, --net) stops nodes with SIGSTOP: it needs Unix, not Windows; the virtual-clock drill runs anywhere")
}

// stopSelf is never called on Windows (procsSupported refuses the drill).
func stopSelf(said func()) { said() }

func resume(p *os.Process) {}
