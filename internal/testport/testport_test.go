package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestListenBelowEphemeral(t *testing.T) {
	hi := ephemeralLow()
	if hi-lowest < minSpan {
		t.Skipf("the ephemeral range starts at %d: Listen takes the kernel's choice here", hi)
	}
	seen := map[int]bool{}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 50 {
		l, err := Listen()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if p < lowest || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice while held", p)
		}
		seen[p] = true
	}
}

func TestFreeIsReusable(t *testing.T) {
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("the port Free returned cannot be bound: %v", err)
	}
	l.Close()
}
