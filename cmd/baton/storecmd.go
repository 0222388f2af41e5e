package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
)

// runStoreCmd implements 'baton store': operations on the store itself.
func runStoreCmd(ctx context.Context, e *env, args []string) int {
	const synopsis = "store floor [--store URL] NAME TOKEN\n\n" +
		"floor raises the fencing token of NAME to TOKEN, so that its next leader gets\n" +
		"a token above TOKEN. Run it after restoring a store from a backup, or after a\n" +
		"store was lost and created afresh, for every name, with TOKEN the highest token\n" +
		"the old store handed out (from baton history before the loss, a fenced\n" +
		"resource's last accepted token, or BATON_TOKEN in the leader's logs). A token\n" +
		"is never lowered. TOKEN is at most 9223372036854775806 (2^63-2): every baton\n" +
		"store holds tokens up to 2^63-1, and the next leader needs one more. A leader holding NAME meanwhile is deposed at its next\n" +
		"renewal: stop the nodes of NAME first if a takeover matters.\n\n" +
		"Flags may also follow the arguments."
	fs := e.newFlagSet("store", synopsis)
	storeURL := storeFlag(fs)
	pos, done, code := e.parseMixed(fs, args)
	if done {
		return code
	}
	switch {
	case len(pos) == 0:
		return e.fail("store", usagef("missing the operation; want: baton store floor NAME TOKEN"))
	case pos[0] != "floor":
		return e.fail("store", usagef("unknown store operation %q%s; want: baton store floor NAME TOKEN", pos[0], didYouMean(pos[0], []string{"floor"})))
	case len(pos) != 3:
		return e.fail("store", usagef("floor takes NAME and TOKEN, got %d argument(s); want: baton store floor NAME TOKEN", len(pos)-1))
	}
	name := pos[1]
	if err := checkName("NAME", name); err != nil {
		return e.fail("store", err)
	}
	floor, err := strconv.ParseUint(pos[2], 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || floor == 0 {
		return e.fail("store", usagef("invalid TOKEN %q; want a positive integer", pos[2]))
	}
	if err != nil || floor > baton.MaxTokenFloor {
		return e.fail("store", usagef("TOKEN %s is too large: at most %d, so that the next leader's token (one more) fits in every baton store (tokens up to %d)",
			pos[2], uint64(baton.MaxTokenFloor), uint64(store.MaxToken)))
	}
	st, err := e.openStore(ctx, *storeURL)
	if err != nil {
		return e.fail("store", err)
	}
	defer st.Close()
	before, _ := st.Get(ctx, name)
	rec, err := baton.RaiseTokenFloor(ctx, st, name, floor)
	if err != nil {
		return e.fail("store", err)
	}
	if before.Version != 0 && before.Token >= floor {
		fmt.Fprintf(e.stdout, "%s is at token %d already, not below %d: nothing written\n", name, rec.Token, floor)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s: token floor raised to %d; its next leader gets token %d\n", name, rec.Token, rec.Token+1)
	return exitOK
}
