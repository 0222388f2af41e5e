package etcdtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// proxy forwards peer connections to one member and drops those from
// members cut off from it.
type proxy struct {
	c      *Cluster
	to     int    // the member it fronts
	target string // the member's real peer address
	l      net.Listener

	mu    sync.Mutex
	conns map[*pipe]struct{}
	wg    sync.WaitGroup
}

// pipe is one proxied connection from member from (-1 if unknown).
type pipe struct {
	from      int
	down, up  net.Conn
	closeOnce sync.Once
}

func (p *pipe) close() {
	p.closeOnce.Do(func() {
		p.down.Close()
		if p.up != nil {
			p.up.Close()
		}
	})
}

func newProxy(c *Cluster, to int, l net.Listener, target string) *proxy {
	p := &proxy{c: c, to: to, target: target, l: l, conns: map[*pipe]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(conn)
		}()
	}
}

func (p *proxy) handle(down net.Conn) {
	pp := &pipe{from: -1, down: down}
	// Read the first request head to learn the caller.
	down.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReaderSize(down, 4096)
	head, err := readHead(br)
	down.SetReadDeadline(time.Time{})
	if err != nil {
		down.Close()
		return
	}
	pp.from = p.callerOf(head)
	if p.c.blocked(pp.from, p.to) {
		down.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		down.Close()
		return
	}
	pp.up = up
	if !p.track(pp) {
		pp.close()
		return
	}
	defer p.untrack(pp)
	// A partition may have started between the check and track.
	if p.c.blocked(pp.from, p.to) {
		pp.close()
		return
	}
	if _, err := up.Write(head); err != nil {
		pp.close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, br); pp.close(); done <- struct{}{} }()
	go func() { io.Copy(down, up); pp.close(); done <- struct{}{} }()
	<-done
	<-done
}

// readHead reads an HTTP request head (through the blank line).
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		if err != nil {
			return nil, err
		}
		if len(head) > maxHeader {
			return nil, errors.New("request head too long")
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return head, nil
		}
	}
}

// callerOf returns the member whose peer URLs the request head names.
func (p *proxy) callerOf(head []byte) int {
	for _, line := range bytes.Split(head, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !strings.EqualFold(string(bytes.TrimSpace(k)), "X-PeerURLs") {
			continue
		}
		for _, u := range strings.Split(string(bytes.TrimSpace(v)), ",") {
			if i := p.c.memberByPeerURL(u); i >= 0 {
				return i
			}
		}
	}
	return -1
}

func (p *proxy) track(pp *pipe) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[pp] = struct{}{}
	return true
}

func (p *proxy) untrack(pp *pipe) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, pp)
}

// cut closes the connections that the current partition blocks.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pp := range p.conns {
		if p.c.blocked(pp.from, p.to) {
			pp.close()
		}
	}
}

func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	for pp := range p.conns {
		pp.close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
