package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storeurl"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and the answer is "no" or the work failed
	exitUsage   = 2 // bad flags, arguments or configuration; nothing was changed
)

// command is one subcommand. run gets the arguments after the command's name
// and returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env carries what a subcommand may touch: its output streams. Keeping them
// here instead of in os.Stdout lets golden tests capture every byte.
type env struct {
	// stdin is baton's standard input (nil: none), passed to COMMAND of
	// 'baton run --once'.
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// open opens a store URL; nil means openStore. Tests share one
	// in-memory store between commands through it.
	open func(ctx context.Context, url string) (store.Store, error)
	// secrets are the passwords of the store URLs this command opened,
	// scrubbed from every error it prints.
	secrets []string
	// now is the wall clock the read commands judge "overdue" by; nil
	// means time.Now. Golden tests fix it.
	now func() time.Time
}

// wallNow returns e.now(), or time.Now() when it is nil.
func (e *env) wallNow() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// openStore opens url with e.open, or openStore when it is nil.
func (e *env) openStore(ctx context.Context, url string) (store.Store, error) {
	e.keepSecrets(url)
	if e.open != nil {
		return e.open(ctx, url)
	}
	return openStore(ctx, url)
}

// keepSecrets notes the passwords of the store url will resolve to, so
// that no error this command prints shows them.
func (e *env) keepSecrets(url string) {
	if resolved, err := resolveStoreURL(url); err == nil {
		e.secrets = append(e.secrets, storeurl.Secrets(resolved)...)
	}
	if pw := os.Getenv("PGPASSWORD"); pw != "" {
		e.secrets = append(e.secrets, pw)
	}
}

// openReader opens url read-only for the read commands: nothing is
// created or written (see openReadStore). Tests' e.open serves it too.
func (e *env) openReader(ctx context.Context, url string) (store.Store, error) {
	e.keepSecrets(url)
	if e.open != nil {
		return e.open(ctx, url)
	}
	return openReadStore(ctx, url)
}

// openExisting opens url for a command that writes to a store that must
// already exist (trigger, resign, transfer, prune): it is first checked
// read-only, so that a mistyped path is an error and not a new store.
func (e *env) openExisting(ctx context.Context, url string) (store.Store, error) {
	if e.open == nil {
		e.keepSecrets(url)
		ro, err := openReadStore(ctx, url)
		if err != nil {
			return nil, err
		}
		ro.Close()
	}
	return e.openStore(ctx, url)
}

// commands lists the subcommands in the order "baton help" shows them.
func commands() []command {
	return []command{
		{name: "run", summary: "run a command on the leader only: once per period, or as a singleton", run: runRun},
		{name: "status", summary: "who leads a name, who waits, its token and lease; a job's schedule and open periods", run: runStatus},
		{name: "serve", summary: "a live status page and JSON API over every name in a store", run: runServe},
		{name: "history", summary: "the election log of a name", run: runHistory},
		{name: "sessions", summary: "the session records of a store: live, expired and dead, with their holders and names", run: runSessions},
		{name: "runs", summary: "the run ledger of a job, newest first, with each run's delay", run: runRuns},
		{name: "next", summary: "the next instants of a schedule or of a registered job", run: runNext},
		{name: "trigger", summary: "ask for a run of a job now (durable: needs no leader)", run: runTrigger},
		{name: "resign", summary: "ask the leader of a name to resign (guarded by its token)", run: runResign},
		{name: "suspend", summary: "suspend a job on every node, durably, with who and why (no period is claimed)", run: runSuspend},
		{name: "resume", summary: "resume a suspended job; missed periods are caught up by its policy", run: runResume},
		{name: "prefer", summary: "change who should lead a job: its preference policy (highest-weight, oldest-version, label:K=V, ...)", run: runPrefer},
		{name: "transfer", summary: "ask the leader of a name to hand over to a waiting node (guarded by its token)", run: runTransfer},
		{name: "store", summary: "operations on the store: floor raises a name's token after a restore", run: runStoreCmd},
		{name: "fence", summary: "the fence in the resource, for jobs in any language: SQL for PostgreSQL and SQLite, an HTTP proxy", run: runFenceCmd},
		{name: "verify", summary: "prove from the election log, the ledger and the fence log that every period was done exactly once", run: runVerify},
		{name: "prune", summary: "delete old finished runs of a job from the ledger", run: runPrune},
		{name: "backfill", summary: "run a range of a job's past periods again (--plan: show, write nothing)", run: runBackfill},
		{name: "bench", summary: "measure holding many names from one process, and their takeover after a crash", run: runBench},
		{name: "drill", summary: "the lesson's experiment on the real implementation, under faults", run: runDrill},
		{name: "sim", summary: "seeded random fault schedules on a virtual cluster, every run checked", run: runSim},
		{name: "explore", summary: "every interleaving of a small cluster's events on the shipping election machine, every state checked", run: runExplore},
		{name: "model", summary: "the lesson's round model: run, measure, cost, scan", run: runModel},
		{name: "calc", summary: "the glossary's arithmetic: quorum, activation", run: runCalc},
		{name: "version", summary: "baton's version and commit, the Go version, the store schema versions it writes", run: runVersion},
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return (&env{stdin: os.Stdin, stdout: stdout, stderr: stderr}).run(ctx, args)
}

func (e *env) run(ctx context.Context, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return e.run(ctx, append([]string{"version"}, args[1:]...))
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			return e.run(ctx, []string{args[1], "--help"})
		}
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	var all []string
	for _, c := range commands() {
		all = append(all, c.name)
	}
	fmt.Fprintf(stderr, "baton: unknown command %q%s; run 'baton help' for the list\n", args[0], didYouMean(args[0], all))
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "baton: one leader per named responsibility, fenced work, exactly-once jobs.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: baton COMMAND [FLAGS] [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'baton COMMAND --help' for a command's flags.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit status, for every command and store:")
	fmt.Fprintln(w, "  0   success")
	fmt.Fprintln(w, "  1   runtime failure: store unreachable, no quorum, a refused request, ...")
	fmt.Fprintln(w, "  2   usage error: bad flags, arguments, store URL or store; nothing was changed")
	fmt.Fprintln(w, "  'baton run --once' exits with its command's status, 75 when leadership was")
	fmt.Fprintln(w, "  not obtained within --wait, 76 when it was lost while the command ran.")
}

// usageError marks an error caused by the caller's input; it maps to exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error. The message names the bad flag or argument
// and what is allowed.
func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// fail prints err as one line prefixed by the command name and returns the
// exit code that fits it: 2 for usage errors, 1 otherwise.
func (e *env) fail(cmd string, err error) int {
	// A package's errors start with its name (see "Errors" in package
	// baton's doc); after "baton CMD: " that would be said twice for
	// package baton and for the package a command is named after.
	msg := strings.TrimPrefix(err.Error(), "baton: ")
	if pkg, _, _ := strings.Cut(cmd, " "); pkg == "sim" || pkg == "drill" || pkg == "explore" {
		msg = strings.TrimPrefix(msg, pkg+": ")
	}
	fmt.Fprintf(e.stderr, "baton %s: %s\n", cmd, escape.String(oneLine(storeurl.Scrub(msg, e.secrets...))))
	var u *usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFailure
}

// oneLine joins the lines of a multi-line message (a driver's error may
// list every address it tried) with "; ", or with a space after a line
// that ends in a colon (the list's heading).
func oneLine(msg string) string {
	var b strings.Builder
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// newFlagSet returns a flag set that reports errors instead of exiting.
// Parse it with e.parse, which prints help to stdout and a bad flag as one
// line to stderr.
func (e *env) newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("baton "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "Usage: baton %s\n\nFlags:\n", synopsis)
		printFlags(e.stdout, fs)
	}
	return fs
}

// parse parses args with fs. It returns (done, code): done is true when the
// caller must return code at once, because help was asked for (exit 0) or a
// flag is bad (one line on stderr, exit 2).
func (e *env) parse(fs *flag.FlagSet, args []string) (bool, int) {
	restore := withDurationErrors(fs)
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it on every error
	err := fs.Parse(args)
	fs.Usage = usage
	restore()
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return true, exitOK
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %s (see '%s --help')\n", fs.Name(), flagError(fs, err.Error()), fs.Name())
		return true, exitUsage
	}
	return false, exitOK
}
