package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
)

func runResign(ctx context.Context, e *env, args []string) int {
	return handover(ctx, e, "resign", args)
}

func runTransfer(ctx context.Context, e *env, args []string) int {
	return handover(ctx, e, "transfer", args)
}

// handover implements 'baton resign' and 'baton transfer': a request to
// the leader, guarded by the token the operator expects it to hold.
func handover(ctx context.Context, e *env, cmd string, args []string) int {
	synopsis := "resign [--store URL] [--token T] NAME\n\nAsks the leader of NAME to stop its work and release the lease, so that any\ncampaigning node takes over at once."
	if cmd == "transfer" {
		synopsis = "transfer [--store URL] --to NODE [--token T] NAME\n\nAsks the leader of NAME to stop its work and hand the lease to NODE, which\ntakes it at once if it is campaigning."
	}
	synopsis += "\n\nThe request is refused (exit 1) if the leader no longer holds token T: a\nnewer term began since you looked. Without --token the current token is read\nfirst, and the command says so. Flags may also follow NAME."
	fs := e.newFlagSet(cmd, synopsis)
	storeURL := storeFlag(fs)
	token := fs.Uint64("token", 0, "the fencing token the leader is expected to hold (default: read the current one)")
	var to string
	if cmd == "transfer" {
		fs.StringVar(&to, "to", "", "the node to hand over to (required)")
	}
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	name, err := oneName(pos, "NAME")
	if err == nil && cmd == "transfer" && to == "" {
		err = usagef("missing --to NODE")
	}
	if err != nil {
		return e.fail(cmd, err)
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail(cmd, err)
	}
	defer st.Close()

	tok := *token
	if !flagsSet(fs)["token"] {
		rec, err := st.Get(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return e.fail(cmd, fmt.Errorf("%q has never had a leader", name))
		}
		if err != nil {
			return e.fail(cmd, err)
		}
		if rec.Free() {
			return e.fail(cmd, fmt.Errorf("%w: %q is free (token %d)", baton.ErrNotLeader, name, rec.Token))
		}
		tok = rec.Token
		fmt.Fprintf(e.stderr, "baton %s: no --token given; using the current token %d of %q (held by %s)\n", cmd, tok, name, rec.Holder)
	}
	if cmd == "transfer" {
		err = baton.Transfer(ctx, st, name, to, tok)
	} else {
		err = baton.RequestResign(ctx, st, name, tok)
	}
	if errors.Is(err, baton.ErrStaleToken) {
		return e.fail(cmd, fmt.Errorf("refused: %w", err))
	}
	if err != nil {
		return e.fail(cmd, err)
	}
	if cmd == "transfer" {
		fmt.Fprintf(e.stdout, "asked the leader of %s (token %d) to hand over to %s\n", name, tok, to)
	} else {
		fmt.Fprintf(e.stdout, "asked the leader of %s (token %d) to resign\n", name, tok)
	}
	return exitOK
}
