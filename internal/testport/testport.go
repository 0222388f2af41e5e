// Package testport chooses loopback ports for test servers that are
// stopped and started again on the same port (an etcd member, a
// PostgreSQL server). A port the kernel hands out for ":0" lies in its
// ephemeral range, where any process's outgoing connection may take it
// while the server is down, and the restart then fails with "address
// already in use" (it happened to store/etcd's quorum-loss test in one
// suite run of five). Ports from Listen lie below that range, where only
// another listener that names its port can take them.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// lowest is the lowest port Listen chooses.
const lowest = 10000

// minSpan is the fewest ports below the ephemeral range for Listen to
// choose from them; with fewer it falls back to the kernel's choice.
const minSpan = 1000

// tries bounds Listen's attempts at random ports.
const tries = 100

var (
	rangeOnce sync.Once
	ephemeral int // the lowest port of the ephemeral range
)

// ephemeralLow returns the lowest port of the kernel's ephemeral range:
// Linux's ip_local_port_range, and elsewhere IANA's 49152 (macOS's and
// Windows's default).
func ephemeralLow() int {
	rangeOnce.Do(func() {
		ephemeral = 49152
		if runtime.GOOS != "linux" {
			return
		}
		b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 0 {
				ephemeral = lo
			}
		}
	})
	return ephemeral
}

// Listen listens on 127.0.0.1 at a random free port below the kernel's
// ephemeral range, or at the kernel's choice when that range leaves too
// few ports below it. The caller closes the listener just before its
// server binds the port.
func Listen() (net.Listener, error) {
	hi := ephemeralLow()
	if hi-lowest < minSpan {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	var last error
	for range tries {
		p := lowest + rand.IntN(hi-lowest)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("testport: no free port in %d tries below %d: %w", tries, hi, last)
}

// Free returns a port that Listen found free, closing its listener.
func Free() (int, error) {
	l, err := Listen()
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
