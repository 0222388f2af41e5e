// Command baton elects one leader per named responsibility, fences its work
// with monotonic tokens and runs scheduled jobs exactly once.
//
// Run "baton help" for the list of commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/batonhq/baton/internal/supervise"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "run" || os.Args[1] == supervise.Arg) {
		oneProc(os.Getenv)
	}
	if len(os.Args) > 1 && os.Args[1] == supervise.Arg {
		// 'baton run' re-executes itself as its command's supervisor.
		os.Exit(supervise.MainRecording(os.Args[2:], recordOutcome))
	}
	if len(os.Args) > 1 && os.Args[1] == "run" {
		// The orphans of a supervisor killed by SIGKILL come to this
		// process, which kills them (package supervise). Only here: a
		// process that adopts must start no children but supervisors.
		if err := supervise.Adopt(); err != nil {
			fmt.Fprintf(os.Stderr, "baton run: %v; a SIGKILL of the command's supervisor would leave the processes that left its group running\n", err)
		}
	}
	// A closed terminal (SIGHUP) and SIGQUIT stop baton like SIGTERM: its
	// command is stopped and its lease released, never left behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
