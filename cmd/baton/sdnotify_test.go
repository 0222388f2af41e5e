package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog's alive: always while not leading; while leading, only
// while the renew loop extends the term within twice the lease.
func TestSDObserverAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &sdObserver{job: "billing", lease: time.Second}
		if !o.alive() {
			t.Fatal("not alive before leading")
		}
		o.Elected("billing", 3)
		time.Sleep(1500 * time.Millisecond)
		o.Extended("billing", time.Second)
		time.Sleep(1500 * time.Millisecond)
		if !o.alive() {
			t.Fatal("not alive 1.5s after an extension, lease 1s")
		}
		time.Sleep(time.Second)
		if o.alive() {
			t.Fatal("alive 2.5s after the last extension, lease 1s: a wedged renew loop")
		}
		o.Lost("billing", nil)
		if !o.alive() {
			t.Fatal("not alive after the term ended")
		}
	})
}

// A notify socket in Linux's abstract namespace ('@' in $NOTIFY_SOCKET)
// gets READY=1 and STATUS=, each STATUS once; the variables are unset for
// COMMAND.
func TestNotifierAbstractSocket(t *testing.T) {
	name := fmt.Sprintf("@baton-test-%d-%d", os.Getpid(), rand.Uint64())
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Setenv("NOTIFY_SOCKET", name)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var log bytes.Buffer
	n := notifierFromEnv(slog.New(slog.NewTextHandler(&log, nil)))
	if n == nil || n.watchdog != 2*time.Second {
		t.Fatalf("notifier %+v, want one with a 2s watchdog", n)
	}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		if _, ok := os.LookupEnv(v); ok {
			t.Errorf("$%s still set", v)
		}
	}
	n.ready("store answered")
	n.status("store answered") // the same: not sent again
	n.status("leader of billing, token 1")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	for _, want := range []string{"READY=1\nSTATUS=store answered", "STATUS=leader of billing, token 1"} {
		k, err := c.Read(buf)
		if err != nil || string(buf[:k]) != want {
			t.Fatalf("got %q (%v), want %q", buf[:k], err, want)
		}
	}
	if log.Len() != 0 {
		t.Errorf("logged %q", log.String())
	}
}

// $WATCHDOG_USEC meant for another process (WATCHDOG_PID) or not a
// positive number gives no watchdog.
func TestNotifierWatchdogNotOurs(t *testing.T) {
	for _, env := range [][2]string{{"1000000", "1"}, {"-5", ""}, {"soon", ""}} {
		t.Setenv("NOTIFY_SOCKET", "/nonexistent/notify")
		t.Setenv("WATCHDOG_USEC", env[0])
		t.Setenv("WATCHDOG_PID", env[1])
		if n := notifierFromEnv(slog.New(slog.DiscardHandler)); n == nil || n.watchdog != 0 {
			t.Errorf("WATCHDOG_USEC=%s WATCHDOG_PID=%s: %+v, want no watchdog", env[0], env[1], n)
		}
	}
}
