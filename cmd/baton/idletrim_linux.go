package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropExecutablePages drops this process's mappings of the pages of its
// own executable that it only reads (code, read-only data, the function
// table) with madvise(MADV_DONTNEED), and returns how many resident bytes
// they held. Such a page is a clean page of the file: dropping it
// unmaps it, the page cache keeps it, and the next use maps it again
// (a minor fault) with the same bytes.
//
// Only a mapping of the executable that is not writable and holds no
// anonymous (copied-on-write) page is dropped: the relocated read-only
// data of a position-independent build holds such pages, which a drop
// would revert to the file's unrelocated bytes.
func dropExecutablePages() (int64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	type mapping struct {
		lo, hi    uint64
		ok        bool // the executable's, not writable
		rss, anon int64
	}
	var maps []mapping
	cur := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if key, ok := strings.CutSuffix(fields[0], ":"); ok && cur >= 0 && len(fields) >= 2 {
			// A field of the current mapping: "Rss:  123 kB".
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			switch key {
			case "Rss":
				maps[cur].rss = n << 10
			case "Anonymous":
				maps[cur].anon = n << 10
			}
			continue
		}
		// A mapping's header: "lo-hi perms offset dev inode [path]".
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok || len(fields) < 5 {
			continue
		}
		var m mapping
		if m.lo, err = strconv.ParseUint(lo, 16, 64); err != nil {
			continue
		}
		if m.hi, err = strconv.ParseUint(hi, 16, 64); err != nil {
			continue
		}
		path := strings.TrimSuffix(strings.Join(fields[5:], " "), " (deleted)")
		m.ok = path == exe && !strings.Contains(fields[1], "w")
		maps = append(maps, m)
		cur = len(maps) - 1
	}
	f.Close()
	if err := sc.Err(); err != nil {
		return 0, err
	}
	var dropped int64
	for _, m := range maps {
		if !m.ok || m.anon != 0 || m.rss == 0 {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.lo), uintptr(m.hi-m.lo), unix.MADV_DONTNEED); e != 0 {
			return dropped, fmt.Errorf("madvise %x-%x: %w", m.lo, m.hi, e)
		}
		dropped += m.rss
	}
	return dropped, nil
}
