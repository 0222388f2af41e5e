// Command benchenv starts the stores that BENCHMARKS.md measures against,
// with durable writes, and prints their baton store URLs: a throwaway
// PostgreSQL server with fsync, synchronous commits and full page writes on,
// and a 3-member etcd cluster whose members fsync (embedded etcd servers, in
// this process). It runs until interrupted, then removes everything it made.
//
//	go run ./internal/benchenv
//	baton bench hold --store "$(sed -n 1p /tmp/benchenv.urls)" ...
//
// It is a development tool: the servers trust every local connection.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/pgtest"
)

func main() {
	out := flag.String("urls", "", "also write the store URLs to this file, one per line (postgres, then etcd)")
	pg := flag.Bool("postgres", true, "start a PostgreSQL server")
	etcd := flag.Bool("etcd", true, "start a 3-member etcd cluster")
	pprof := flag.String("pprof", "", "serve net/http/pprof on this address (host:port), to profile the servers under load")
	flag.Parse()
	if *pprof != "" {
		go func() { fmt.Fprintln(os.Stderr, "benchenv: pprof:", http.ListenAndServe(*pprof, nil)) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var urls []string
	if *pg {
		s, err := pgtest.StartDurableServer()
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchenv: postgres:", err)
			os.Exit(1)
		}
		defer s.Close()
		if err := s.Exec(ctx, "CREATE DATABASE bench"); err != nil {
			fmt.Fprintln(os.Stderr, "benchenv: create database:", err)
			os.Exit(1)
		}
		urls = append(urls, s.URL("bench"))
	}
	if *etcd {
		c, err := etcdtest.StartDurable(3)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchenv: etcd:", err)
			os.Exit(1)
		}
		defer c.Close()
		urls = append(urls, "etcd://"+strings.Join(c.Endpoints(), ","))
	}
	for _, u := range urls {
		fmt.Println(u)
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(strings.Join(urls, "\n")+"\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "benchenv:", err)
		}
	}
	<-ctx.Done()
}
