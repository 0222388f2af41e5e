package main

import "context"

// runFenceCmd implements 'baton fence': the fencing tools for resources
// that are not Go programs.
func runFenceCmd(ctx context.Context, e *env, args []string) int {
	const want = "want: baton fence proxy --upstream URL [FLAGS] (see 'baton fence proxy --help')"
	switch {
	case len(args) == 0:
		return e.fail("fence", usagef("missing the operation; %s", want))
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		return runFenceProxy(ctx, e, []string{"--help"})
	case args[0] == "proxy":
		return runFenceProxy(ctx, e, args[1:])
	}
	return e.fail("fence", usagef("unknown fence operation %q; %s", args[0], want))
}
