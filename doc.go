// Package baton gives work that must be done by exactly one node of a
// cluster to exactly one node, and makes sure it is done once.
//
// An Elector campaigns for a named responsibility on a shared Store (package
// store and its backends). The winner gets a Term: a leadership with a
// fencing token that is greater than every earlier term's, a context that is
// cancelled the moment the leadership is lost or may be lost, and Valid,
// which reads the clock at every call.
//
//	e, _ := baton.New(st, "billing", baton.WithNode("node-a"))
//	term, _ := e.Campaign(ctx)
//	defer term.Resign(context.Background())
//	err := invoices.Write(term.Context(), term.Token(), lines) // fenced by the token
//
// A Group holds many names from one process (NewGroup, Group.Hold): its
// names share one session record, renewed with one store write per renew
// interval whatever their number, while each name keeps its own Term and
// token. With WithBalance, the Groups of several processes that hold the
// same names share them, about N/P each, by asking each other for
// handovers (transfers): a name still never has two holders.
//
// # What it guarantees
//
// With clocks whose rates differ by less than the clock margin e, at most
// one Term of a name is Valid at any moment: a leader counts its lease from
// the moment it sent its last successful renewal, on its own monotonic clock,
// and a contender takes over only after it saw the record unchanged for the
// lease plus 2e on its own clock. No decision compares two machines' wall
// clocks. Every acquisition, release, takeover and transfer is written to
// the election log in the same atomic write as the record.
//
// # What it does not guarantee
//
// Election decides who believes it is the leader; it cannot stop a process
// that checked Valid, was then paused (a GC pause, SIGSTOP, a frozen VM) past
// its deadline, and then acted. No election protocol can. Fencing does: every
// piece of work carries Term.Token to the resource it changes, and the
// resource refuses tokens lower than the highest it has seen (package
// fence). Work that must happen exactly once needs both, and a durable
// record of what is due (package schedule), so that a trigger that arrives
// while nobody leads is run by the next leader.
//
// # Errors
//
// Every package of the module follows one convention. A sentinel error is
// a bare phrase that states its contract and composes when wrapped:
// store.ErrNotFound is "not found", ErrNotLeader "nobody holds the
// election". An error a package constructs starts with the package's
// name ("baton: ", "schedule: ", "drill: ", "sim: ", "model: "), then
// says what failed, wrapping the sentinel or the cause with %w:
//
//	fmt.Errorf("baton: %w: %q is free (token %d)", ErrNotLeader, name, token)
//
// A package that wraps an error of its own does not repeat its name, and
// an error that names an invalid option, field or argument is the one
// type *OptionError, which every public constructor (New, NewGroup,
// schedule.New, fence.NewKey, fenceproxy.New, ...) returns wrapped in its
// package's name, so that a caller can say which to fix. Callers test errors with
// errors.Is and errors.As, never by their text.
package baton
