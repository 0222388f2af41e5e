package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeRSS returns the resident bytes of this process's read-only mappings
// of its executable, from /proc/self/smaps.
func exeRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[5] == exe && !strings.Contains(fields[1], "w")
			continue
		}
		if in && len(fields) >= 2 && fields[0] == "Rss:" {
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			sum += n << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// Dropping the executable's pages takes them out of the RSS (what the
// test binary's start-up and tests touched: megabytes), and the code
// still runs: the pages fault back in.
func TestDropExecutablePages(t *testing.T) {
	before := exeRSS(t)
	if before < 2<<20 {
		t.Fatalf("the executable's resident pages: %d bytes before the drop; want megabytes for the test to mean anything", before)
	}
	dropped, err := dropExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	t.Logf("executable's resident pages: %d KiB before, %d KiB dropped, %d KiB after", before>>10, dropped>>10, after>>10)
	if dropped < before/2 || after > before/2 {
		t.Fatalf("dropped %d of %d resident bytes, %d after; want most of them gone", dropped, before, after)
	}
}
