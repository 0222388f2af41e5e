//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// inode returns the device and inode numbers of fi (from os.Stat).
func inode(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // Dev is int32 on some platforms
}
