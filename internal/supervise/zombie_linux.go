package supervise

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// procStat is what this package reads of a process in /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	state           string // R, S, D, Z (exited, not reaped), X (dead), ...
}

// processes returns every process of /proc with its parent, group and
// state. ok is false when /proc cannot be read or a stat line does not
// parse; the processes that did parse are returned all the same. A
// process that exits meanwhile is left out.
func processes() (ps []procStat, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	ok = true
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 3 {
			ok = false
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		ps = append(ps, procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0]})
	}
	return ps, ok
}

// onlyZombies reports whether every process of the group pgid has exited
// (zombies not reaped yet), from /proc; false when it cannot tell. Without
// a subreaper the group's orphans are init's to reap, and an init that
// reaps late (a container's) would keep a killed group "alive".
func onlyZombies(pgid int) bool {
	ps, ok := processes()
	if !ok {
		return false
	}
	for _, p := range ps {
		if p.pgrp == pgid && p.state != "Z" && p.state != "X" {
			return false
		}
	}
	return true
}
