//go:build unix

package testenv

import (
	"os"
	"syscall"
)

// openTTY opens the controlling terminal for writing, or returns nil when
// there is none. It opens it with syscall.Open rather than os.OpenFile: go
// test's cache notes the files a test opens, and the terminal, whose
// modification time changes with every keystroke, would make every run a
// cache miss.
func openTTY() *os.File {
	fd, err := syscall.Open("/dev/tty", syscall.O_WRONLY|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "/dev/tty")
}
