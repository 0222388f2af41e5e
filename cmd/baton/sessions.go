package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/internal/escape"
	"github.com/batonhq/baton/internal/inspect"
)

const sessionsSynopsis = `sessions [--store URL] [--json]

Lists the session records of a store: one per process instance that holds
names through a baton.Group (and per lost session it started again). For
each: its state, its holder (node id and incarnation), how many names point
at it, and the store's time of its last write (the last renewal of a live
session, the end of a dead one).

  live     held, renewed within its lease by store time
  expired  held, but not renewed for more than its lease by store time:
           probably dead (a flag, not a decision); a contender for one of
           its names ends it after lease + 2e on its own clock
  dead     released or ended: never held again. A running Group deletes
           dead session records after a grace (about five leases), in
           small batches, so they do not pile up over restarts; deleting
           one loses no token and no history

The store is opened read-only. NAMES is "-" on etcd, which cannot count the
names of a session without reading every name.`

func runSessions(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("sessions", sessionsSynopsis)
	storeURL := storeFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON (times RFC 3339, durations in seconds)")
	if done, code := e.parseNoArgs("sessions", fs, args); done {
		return code
	}
	st, err := e.openReader(ctx, *storeURL)
	if err != nil {
		return e.fail("sessions", err)
	}
	defer st.Close()
	now, err := inspect.StoreNow(ctx, st, e.wallNow())
	if err != nil {
		return e.fail("sessions", readErr(*storeURL, err))
	}
	ss, err := inspect.Sessions(ctx, st, now)
	if err != nil {
		return e.fail("sessions", readErr(*storeURL, err))
	}
	if *asJSON {
		return e.writeJSON("sessions", ss, exitOK)
	}
	if len(ss) == 0 {
		fmt.Fprintln(e.stdout, "no session records")
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tHOLDER\tINCARNATION\tNAMES\tWRITTEN\tAGO")
	counts := map[string]int{}
	for _, s := range ss {
		counts[s.State]++
		names := "-"
		if s.Names != nil {
			names = fmt.Sprint(*s.Names)
		}
		ago := time.Duration(s.SinceWrittenSeconds * float64(time.Second)).Round(time.Millisecond)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%v\n", escape.String(s.Name), s.State, cell(orDash(s.Holder)),
			cell(orDash(s.Incarnation)), names, s.Written.Format(timeLayout), ago)
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "\n%d session records: %d live, %d expired, %d dead\n", len(ss),
		counts[inspect.SessionLive], counts[inspect.SessionExpired], counts[inspect.SessionDead])
	return exitOK
}
