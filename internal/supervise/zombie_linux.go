package supervise

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// onlyZombies reports whether every process of the group pgid has exited
// (zombies not reaped yet), from /proc; false when it cannot tell. Without
// a subreaper the group's orphans are init's to reap, and an init that
// reaps late (a container's) would keep a killed group "alive".
func onlyZombies(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			return false
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}
