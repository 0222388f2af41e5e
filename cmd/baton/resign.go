package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
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
	synopsis := "resign [--store URL] [--token T] [--json] NAME\n\nAsks the leader of NAME to stop its work and release the lease, so that another\ncampaigning node takes over at once: the resigned node, if it campaigns again\n(as 'baton run' does), leaves the record to the others for two polls first.\nTo pick the next leader, use 'baton transfer --to NODE'."
	if cmd == "transfer" {
		synopsis = "transfer [--store URL] --to NODE [--token T] [--json] NAME\n\nAsks the leader of NAME to stop its work and hand the lease to NODE, which\ntakes it at once. NODE must be campaigning for NAME (see the waiting nodes in\n'baton status'): a transfer to any other node is refused (exit 1) with the\nlist of those that are, and the leader keeps leading."
	}
	synopsis += "\n\nThe request is refused (exit 1) if the leader no longer holds token T: a\nnewer term began since you looked. Without --token the current token is read\nfirst, and the command says so. Flags may also follow NAME."
	fs := e.newFlagSet(cmd, synopsis)
	storeURL := storeFlag(fs)
	token := fs.Uint64("token", 0, "the fencing token the leader is expected to hold (default: read the current one)")
	asJSON := fs.Bool("json", false, "print JSON")
	var to string
	if cmd == "transfer" {
		fs.StringVar(&to, "to", "", "the node to hand over to (required)")
	}
	name, done, code := e.parseName(cmd, fs, args, "NAME")
	if done {
		return code
	}
	if cmd == "transfer" && to == "" {
		return e.fail(cmd, usagef("missing --to NODE"))
	}
	st, err := e.openExisting(ctx, *storeURL)
	if err != nil {
		return e.fail(cmd, err)
	}
	defer st.Close()

	tok := *token
	if !flagsSet(fs)["token"] {
		rec, err := st.Get(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			if err := inspect.Known(ctx, st, name); err != nil {
				return e.fail(cmd, readErr(*storeURL, err))
			}
			return e.fail(cmd, fmt.Errorf("%q has never had a leader", name))
		}
		if err != nil {
			return e.fail(cmd, err)
		}
		if rec.Free() {
			return e.fail(cmd, fmt.Errorf("%w: %q is free (token %d)", baton.ErrNotLeader, name, rec.Token))
		}
		tok = rec.Token
		fmt.Fprintf(e.stderr, "baton %s: no --token given; using the current token %d of %q (held by %s)\n", cmd, tok, name, escape.String(rec.Holder))
	}
	if cmd == "transfer" {
		if err := campaigning(ctx, st, name, to); err != nil {
			return e.fail(cmd, err)
		}
		err = baton.Transfer(ctx, st, name, to, tok)
	} else {
		err = baton.RequestResign(ctx, st, name, tok)
	}
	if errors.Is(err, baton.ErrStaleToken) {
		return e.fail(cmd, fmt.Errorf("refused: %w", err))
	}
	if errors.Is(err, baton.ErrTokenAhead) {
		return e.fail(cmd, fmt.Errorf("refused: %w; check the number, or omit --token to use the current one", err))
	}
	if err != nil {
		return e.fail(cmd, err)
	}
	if *asJSON {
		v := struct {
			Name   string `json:"name"`
			Action string `json:"action"`
			Token  uint64 `json:"token"`
			To     string `json:"to,omitempty"`
		}{name, cmd, tok, to}
		return e.writeJSON(cmd, v, exitOK)
	}
	if cmd == "transfer" {
		fmt.Fprintf(e.stdout, "asked the leader of %s (token %d) to hand over to %s\n", name, tok, to)
	} else {
		fmt.Fprintf(e.stdout, "asked the leader of %s (token %d) to resign\n", name, tok)
	}
	return exitOK
}

// campaigning returns nil if node is campaigning for name (a fresh
// candidate row that is not the holder's), else an error listing the nodes
// that are.
func campaigning(ctx context.Context, st store.Store, name, node string) error {
	rec, err := st.Get(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if rec.Holder == node {
		return fmt.Errorf("%w: %s already leads %s", errNotWaiting, node, name)
	}
	cands, err := st.Candidates(ctx, name)
	if err != nil {
		return err
	}
	var waiting []string
	for _, c := range cands {
		if c.Stale() || c.Node == rec.Holder {
			continue
		}
		if c.Node == node {
			return nil
		}
		waiting = append(waiting, c.Node)
	}
	if len(waiting) == 0 {
		return fmt.Errorf("%w: %s is not campaigning for %s, and no node is waiting to take over; the leader keeps leading", errNotWaiting, node, name)
	}
	return fmt.Errorf("%w: %s is not campaigning for %s; nodes waiting to take over: %s", errNotWaiting, node, name, strings.Join(waiting, ", "))
}

// errNotWaiting: a transfer's target does not campaign for the name.
var errNotWaiting = errors.New("refused")
