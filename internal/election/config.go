package election

import "time"

// Config is the machine's fixed configuration. Every runtime validates it
// with Validate before it builds a machine (bounds.go).
type Config struct {
	Name        string        // election name
	Node        string        // this node's id
	Incarnation string        // this process instance; new on every restart
	Lease       time.Duration // how long a successful renewal keeps leadership valid
	Renew       time.Duration // time between renewals (< Lease)
	Margin      time.Duration // clock uncertainty e; takeover waits Lease + 2*Margin
	Poll        time.Duration // how often a contender re-reads the record
	Retry       time.Duration // how soon a failed leader renewal is retried
	// Check is how often a contender waiting for another process's session
	// (Await) re-reads its record anyway, to see a release that no change
	// notification reported; 0 means Poll. A Group also re-reads each name
	// it holds this often (Check events). A Group in session mode uses it
	// while its change feed is live (Feed), else at most a lease; and a
	// Group re-reads at most CheckRate names a second in all.
	Check time.Duration

	// Balance makes a Group in session mode share its names with the other
	// balanced processes that campaign for them: it asks a process that
	// holds at least two more of them than it does to hand some over
	// (see balance.go). Ignored without sessions.
	Balance bool
	// Share is a balanced Group's weight among the balanced Groups that
	// campaign for the same names: each aims at about N*Share/sum(Share)
	// of the N names (balance.go, "Shares"); 0 means 1. 1 to MaxWeight.
	// Its session record's name carries it (SessionName), and so does
	// every record held through that session.
	Share int

	// TakeStep is the most names a Group tells in one step that the
	// session they await ended (the rest are due at once, a step at a
	// time: see DefaultTakeStep); 0 means DefaultTakeStep. The simulator
	// draws small ones, so that its takeovers of a few names run in steps
	// as a library's takeover of many does.
	TakeStep int

	// Succession makes a Group in session mode, not balanced, end another
	// process's dead session by naming its own live session the successor
	// (store.Resolve): every name held through the dead session is then
	// held through this one, without a write per name, and the machines
	// that await it take their terms from a read that shows it
	// (docs/succession.md). Only a store that keeps successions
	// (store.Succeeder) takes that write.
	Succession bool

	// OrderedFeed says that the change feed the runtime reports (Feed,
	// Changed) is one of a store.OrderedFeed, and that the runtime follows
	// each batch with Synced. A Group with succession then takes the
	// names a succession passed on to its session from the reads its
	// machines made while they waited, without reading them again, when
	// its feed shows that none of them changed since (docs/succession.md,
	// "Adoption without a read").
	OrderedFeed bool

	// Prefer is the preference policy of every name of the machine (a
	// Group's names may each get another with SetPolicy); the zero value,
	// PreferNone, never moves the lead (docs/prefer.md). Hysteresis is
	// how long a term lasts before its leader may hand over to a
	// preferred candidate: at least the lease when Prefer is set. Self
	// is this node's own candidacy, what the policy judges of it.
	Prefer     Policy
	Hysteresis time.Duration
	Self       Attrs

	// Mutate turns protections off, so that the simulator (baton sim
	// --mutate) and the tests can show that their checks catch each
	// breach. Never set outside them.
	Mutate Mutations
}

// Mutations each turn one protection of the protocol off. The zero value
// is the protocol as it ships.
type Mutations struct {
	// NoSessionMargin makes an observer end another process's session once
	// its record stayed unchanged for the lease alone, without the 2e.
	NoSessionMargin bool
	// SessionNameExpiry makes a contender treat a name held through another
	// process's session like a name renewed on its own record: taken over
	// once that record stayed unchanged for lease + 2e, whether the session
	// lives or not.
	SessionNameExpiry bool
	// NoPull makes a balanced Group never ask for a handover, so the names
	// stay where they fell and the simulator's balance check must catch it.
	NoPull bool
	// NoShares makes a balanced Group ignore the Groups' weights (Share):
	// every Group aims at N/P, so the simulator's check of the weighted
	// shares must catch it.
	NoShares bool
	// NoSplit makes a balanced Group take a dead session's names at once,
	// all of them, as an unbalanced one does, instead of splitting them
	// by the rendezvous hash and the shares: names move twice after a
	// leave, and the election tests' leave check must catch it.
	NoSplit bool
	// WrapDeadline brings back the arithmetic before the bounds: a held
	// record's lease is trusted whatever it is, and lease + 2e wraps
	// around instead of saturating, so a huge or negative stored lease
	// looks expired at once.
	WrapDeadline bool
	// AdoptUnread makes a machine told that its Group's session succeeded
	// the session it awaits take the term from the record it read before,
	// without reading it again: a release by the dead holder, or any write,
	// in between is missed.
	AdoptUnread bool
	// AdoptUnsynced makes a Group that succeeded a session with its feed
	// live take the names passed on from its machines' reads at once,
	// without waiting for the feed to report the succession's own write:
	// a change made before the succession that the feed has not reported
	// yet is missed.
	AdoptUnsynced bool
	// AdoptAcrossGap makes a machine take a term passed on to its
	// Group's session from its last read whether or not the live feed
	// covers that read: one made before the feed last closed (a write in
	// the gap went unreported), or whose answer may predate a change
	// notified while it was out.
	AdoptAcrossGap bool
	// ListEnded makes a Group that a succession passed names on to list
	// the records of the session that ended, not those of its own: names
	// that a collector settled onto its session first are never found,
	// and those it does not campaign for stay held through its session.
	ListEnded bool
	// ListNoRetry makes a Group whose listing's release of a name failed
	// (the record changed: an operator's transfer request, say) leave it:
	// a name it does not campaign for stays held through its session.
	ListNoRetry bool
	// ReadBeforeExpiry makes an observer whose read may predate a change
	// notified while it was out read again before it checks whether the
	// session's wait ran out: notifications that come during every read
	// (forged: vcluster.Config.Forge) keep a dead session alive for ever.
	ReadBeforeExpiry bool
	// NoSafePoint makes a leader hand over to a preferred candidate
	// whether or not its runtime is between runs (SafePoint): a run under
	// way is cut off by the handover.
	NoSafePoint bool
	// NoHysteresis makes a leader hand over to a preferred candidate as
	// soon as its term begins, without lasting the hysteresis.
	NoHysteresis bool
	// NoTakeover makes a contender never take over a held record that
	// stopped being renewed, however long it stood unchanged: it takes a
	// name only when it is free (released, or never held). Nothing unsafe
	// follows, but once a leader dies without releasing, nobody leads
	// that name again: only a liveness check sees it (the simulator's
	// held-at-the-end check, the explorer's 2x1-live).
	NoTakeover bool
	// NoDefer makes a contender that may take a name over take it at
	// once, though it knows a strictly better live candidate: a failover
	// goes to whoever is first, not to the preferred candidate.
	NoDefer bool
}
