// Command baton elects one leader per named responsibility, fences its work
// with monotonic tokens and runs scheduled jobs exactly once.
//
// Run "baton help" for the list of commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
