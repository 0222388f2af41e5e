package storedriver

import (
	"fmt"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/store"
)

// CheckSwap validates s against the current record cur (cur.Version == 0 when
// the record does not exist). Backends call it inside their write
// transaction so that every backend enforces the same rules with the same
// errors.
func CheckSwap(cur store.Record, s store.Swap) error {
	return checkSwap(&cur, &s.Record, s.Expect, s.Record.Token, s.Record.Successor)
}

// checkSwap is CheckSwap of the swap of r at version expect, read in
// place (a record is large to copy, and a store checks every write), with
// token and successor as r's: CheckSuccessionSwap checks r with its
// resolved token and no successor, as CheckSwap would a copy of it.
func checkSwap(cur, r *store.Record, expect int64, token uint64, successor string) error {
	if r.Name == "" {
		return fmt.Errorf("%w: empty record name", store.ErrInvalid)
	}
	if successor != "" {
		return fmt.Errorf("%w: record %q names a successor, and this store keeps no successions (store.Succeeder)", store.ErrInvalid, r.Name)
	}
	if err := store.CheckName(r.Name); err != nil {
		return fmt.Errorf("election record: %w", err)
	}
	if cur.Version != expect {
		return &versionConflict{name: r.Name, at: cur.Version, expect: expect}
	}
	if err := CheckElectionToken(r.Name, max(cur.Token, token)); err != nil {
		return err
	}
	if token < cur.Token {
		return fmt.Errorf("%w: token of %q would go back from %d to %d", store.ErrInvalid, r.Name, cur.Token, token)
	}
	if store.IsSession(r.Name) && cur.Version != 0 && cur.Free() && !r.Free() {
		return fmt.Errorf("%w: session %q is dead and is never held again", store.ErrInvalid, r.Name)
	}
	if r.Session != "" && (r.Free() || !store.IsSession(r.Session)) {
		return fmt.Errorf("%w: record %q names session %q but is not held through one", store.ErrInvalid, r.Name, r.Session)
	}
	if r.Holder == "" && r.Incarnation != "" {
		return fmt.Errorf("%w: a free record of %q has an incarnation", store.ErrInvalid, r.Name)
	}
	return nil
}

// versionConflict is CheckSwap's error for a swap whose expected version
// is not the record's: fmt.Errorf("%w: %q is at version %d, expected %d",
// store.ErrConflict, name, at, expect), its message formatted only when
// it is read (contenders race for a record, and every loser is refused).
type versionConflict struct {
	name       string
	at, expect int64
}

// Error is the message fmt.Errorf made: store.ErrConflict's, then the
// record's name and both versions.
func (e *versionConflict) Error() string {
	return fmt.Sprintf("%v: %q is at version %d, expected %d", store.ErrConflict, e.name, e.at, e.expect)
}

// Unwrap makes errors.Is(err, store.ErrConflict) hold.
func (e *versionConflict) Unwrap() error { return store.ErrConflict }

// Renews reports whether s, applied to the record cur, is a renewal that
// a backend may leave off its change feed: a swap at cur's version,
// without an event, of a held election record (not a session's), whose
// new values are cur's (holder, incarnation, token, lease, transfer and
// session). It changes only the record's Version and Updated. A backend
// need not report it on its change feed (see store.Store.WatchChanges),
// so that it can write one with the fewest pages: a watcher of the record
// has nothing to act on (a contender of a name on its own record times
// the lease from its own reads, every poll, and takes over only by a Swap
// at the version it read, which the renewal made fail).
//
// A session's renewal is not one (see RenewsSession): it stays on the
// feed. The observers of a session read it when the feed reports a
// change and otherwise only when their lease + 2e wait runs out
// (internal/election, while the feed is live), so a renewal left off the
// feed would be seen up to a renew interval late, and a crash takeover,
// timed from the last renewal seen, would come as late.
func Renews(cur store.Record, s store.Swap) bool {
	r := s.Record
	return s.Event == "" && cur.Version != 0 && s.Expect == cur.Version && cur.Holder != "" && !store.IsSession(r.Name) &&
		r.Name == cur.Name && r.Holder == cur.Holder && r.Incarnation == cur.Incarnation && r.Token == cur.Token &&
		r.Lease == cur.Lease && r.Transfer == cur.Transfer && r.Session == cur.Session
}

// RenewsSession reports whether s, applied to the record cur, is a
// session's renewal: what Renews says of a name's record, of a session
// record (store.IsSession) instead. It changes only the record's Version
// and Updated, and it must be on the change feed (see Renews and
// store.Store.WatchChanges). A backend may write it as one row all the
// same and report it by other means than the feed's index: SQLite's
// poller reads the versions of the held session records at every poll
// that follows a commit, PostgreSQL's renewal sends a notification that
// names the record and its version.
func RenewsSession(cur store.Record, s store.Swap) bool {
	r := s.Record
	return s.Event == "" && cur.Version != 0 && s.Expect == cur.Version && cur.Holder != "" && store.IsSession(r.Name) &&
		r.Name == cur.Name && r.Holder == cur.Holder && r.Incarnation == cur.Incarnation && r.Token == cur.Token &&
		r.Lease == cur.Lease && r.Transfer == cur.Transfer && r.Session == cur.Session
}

// CheckElectionToken returns an error wrapping store.ErrInvalid and
// store.ErrTokenLimit if token, of the election record name, is above
// store.MaxToken; CheckRunToken the same for a run of job's period.
// Backends call them (CheckSwap and CheckRunSwap do) before writing a
// token, so that every backend refuses the same tokens with the same
// permanent error. Both are on the path of every write: they format their
// message only for a token they refuse.
func CheckElectionToken(name string, token uint64) error {
	if token > store.MaxToken {
		return tokenLimit(fmt.Sprintf("election %q", name), token)
	}
	return nil
}

// CheckRunToken is CheckElectionToken for the token of a run.
func CheckRunToken(job, period string, token uint64) error {
	if token > store.MaxToken {
		return tokenLimit(fmt.Sprintf("run %s/%s", job, period), token)
	}
	return nil
}

func tokenLimit(what string, token uint64) error {
	return fmt.Errorf("%w: %w: %s token %d is above %d, the largest a baton store holds; a token is never lowered, so give the work another name",
		store.ErrInvalid, store.ErrTokenLimit, what, token, uint64(store.MaxToken))
}

// CheckRunSwap validates s against the current ledger row cur (cur.Version ==
// 0 when the row does not exist) and, for a fenced swap, the current
// election token of the job. It returns store.ErrConflict, store.ErrInvalid or
// store.ErrStaleToken, all wrapped with detail.
func CheckRunSwap(cur store.Run, s store.RunSwap, electionToken uint64) error {
	r := s.Run
	if r.Job == "" || r.Period == "" {
		return fmt.Errorf("%w: a run needs a job and a period", store.ErrInvalid)
	}
	if err := store.CheckName(r.Job); err != nil {
		return fmt.Errorf("run of job: %w", err)
	}
	if !r.State.Known() {
		return fmt.Errorf("%w: run %s/%s: state %.40q is none of %v", store.ErrInvalid, r.Job, r.Period, r.State, store.RunStates)
	}
	if cur.Version != s.Expect {
		return fmt.Errorf("%w: run %s/%s is at version %d, expected %d", store.ErrConflict, r.Job, r.Period, cur.Version, s.Expect)
	}
	if err := CheckRunToken(r.Job, r.Period, r.Token); err != nil {
		return err
	}
	if cur.Version != 0 && cur.State == store.Done {
		return fmt.Errorf("%w: run %s/%s is already done", store.ErrInvalid, r.Job, r.Period)
	}
	if s.Fenced && r.Token != electionToken {
		return fmt.Errorf("%w: run %s/%s carries token %d, the election of %q is at token %d", store.ErrStaleToken, r.Job, r.Period, r.Token, r.Job, electionToken)
	}
	return nil
}

// CheckRunSuspended returns the error store.Store.SwapRun gives for s
// when the job of s.Run is job (found false: not registered), nil when
// the write applies: a claim or skip (s.Claims) of a suspended job wraps
// store.ErrSuspended. Backends call it after
// CheckRunSwap, with the job read in the same atomic step as the write
// and under the lock (or compare) that orders it with SuspendJob; they
// need read the job only when s.Claims.
func CheckRunSuspended(s store.RunSwap, job store.Job, found bool) error {
	if !found || !s.Claims() || !job.Suspension.Active() {
		return nil
	}
	return fmt.Errorf("%w: job %q was suspended by %s; the %s of period %s is refused until it is resumed",
		store.ErrSuspended, s.Run.Job, job.Suspension.By, claimWord(s.Run.State), s.Run.Period)
}

func claimWord(st store.RunState) string {
	if st == store.Skipped {
		return "skip"
	}
	return "claim"
}

// NextEvent returns the election log event that records the swap s applied
// with sequence number seq at store time of the new record rec.
func NextEvent(seq uint64, rec store.Record, kind store.EventKind) store.Event {
	return store.Event{
		Seq:         seq,
		Name:        rec.Name,
		Kind:        kind,
		Holder:      rec.Holder,
		Incarnation: rec.Incarnation,
		Token:       rec.Token,
		Transfer:    rec.Transfer,
		Time:        rec.Updated,
	}
}

// CheckPrune returns the error store.Store.PruneRuns gives for p before touching
// anything: store.ErrInvalid for a request that can never succeed, and for a
// fenced one whose token is not electionToken, an error wrapping
// store.ErrStaleToken. Backends call it with the token they read in the
// same atomic step as the delete.
func CheckPrune(p store.Prune, electionToken uint64) error {
	if !p.Valid() {
		return fmt.Errorf("%w: prune of %q: want a job name, a limit of at least 1, final states only and a keep of 0 or more, got limit %d, states %v, keep %d", store.ErrInvalid, p.Job, p.Limit, p.States, p.Keep)
	}
	if p.Fenced && p.Token != electionToken {
		return fmt.Errorf("%w: prune of %s carries token %d, the election of %q is at token %d", store.ErrStaleToken, p.Job, p.Token, p.Job, electionToken)
	}
	return nil
}

// RescheduledEvent returns the election log event store.Store.UpdateJob appends to the
// log of rec's name: the record as it is, Kind store.Rescheduled, Detail
// "FROM -> TO".
func RescheduledEvent(seq uint64, rec store.Record, u store.JobUpdate, at time.Time) store.Event {
	ev := NextEvent(seq, rec, store.Rescheduled)
	ev.Time = at
	ev.Detail = u.Expect + " -> " + u.Schedule
	return ev
}

// CheckJobUpdate returns the error store.Store.UpdateJob gives when the job's current
// schedule is cur (found false: no such job), nil when the update applies.
func CheckJobUpdate(u store.JobUpdate, cur store.Job, found bool) error {
	switch {
	case u.Name == "" || u.Schedule == "":
		return fmt.Errorf("%w: job update needs a name and a schedule", store.ErrInvalid)
	case !found:
		return fmt.Errorf("job %q: %w", u.Name, store.ErrNotFound)
	case cur.Schedule != u.Expect:
		return fmt.Errorf("%w: job %q has schedule %q, not %q", store.ErrConflict, u.Name, cur.Schedule, u.Expect)
	}
	return nil
}

// PruneBound returns the period key below which PruneRuns may delete rows:
// the greater of p.Before and keepKey, the key of the job's p.Keep-th
// newest row ("" when p.Keep is 0 or the job has fewer rows).
func PruneBound(p store.Prune, keepKey string) string {
	if keepKey > p.Before {
		return keepKey
	}
	return p.Before
}

// PruneDeletes returns the period keys, oldest first, that PruneRuns of
// p (checked by CheckPrune) deletes from a job's ledger whose keys, in
// order, are keys, and whose row of a key is row(key): keys below
// PruneBound (keepKey the key of the p.Keep-th newest row), of rows in
// one of p.States, never the newest row that is not Manual (a catch-up
// starts after it), at most p.Limit of them. memstore applies it, and so
// does the exhaustive explorer's ledger (internal/lab/explore).
func PruneDeletes(keys []string, row func(key string) store.Run, p store.Prune) []string {
	newest := "" // the newest scheduled row is kept
	for i := len(keys) - 1; i >= 0; i-- {
		if !row(keys[i]).Manual {
			newest = keys[i]
			break
		}
	}
	keepKey := ""
	if p.Keep > 0 && len(keys) >= p.Keep {
		keepKey = keys[len(keys)-p.Keep]
	}
	before := PruneBound(p, keepKey)
	var del []string
	for _, k := range keys {
		if k >= before || len(del) == p.Limit {
			break
		}
		if k != newest && slices.Contains(p.States, row(k).State) {
			del = append(del, k)
		}
	}
	return del
}

// CheckSuspend returns the error store.Store.SuspendJob gives when the
// job is cur (found false: no such job), nil when the change applies.
func CheckSuspend(s store.JobSuspend, cur store.Job, found bool) error {
	switch {
	case s.Name == "":
		return fmt.Errorf("%w: suspending or resuming a job needs its name", store.ErrInvalid)
	case s.By == "":
		return fmt.Errorf("%w: suspending or resuming job %q needs who does it (By)", store.ErrInvalid, s.Name)
	case len(s.By) > store.MaxReasonLen || len(s.Reason) > store.MaxReasonLen:
		return fmt.Errorf("%w: who and why of at most %d bytes each, got %d and %d", store.ErrInvalid, store.MaxReasonLen, len(s.By), len(s.Reason))
	case !printable(s.By) || !printable(s.Reason):
		return fmt.Errorf("%w: who and why must be printable text, without control characters", store.ErrInvalid)
	case !found:
		return fmt.Errorf("job %q: %w", s.Name, store.ErrNotFound)
	case s.Suspend && cur.Suspension.Active():
		return fmt.Errorf("%w: job %q is already suspended (by %s)", store.ErrConflict, s.Name, cur.Suspension.By)
	case !s.Suspend && !cur.Suspension.Active():
		return fmt.Errorf("%w: job %q is not suspended", store.ErrConflict, s.Name)
	}
	return nil
}

// printable reports whether s is valid UTF-8 of printable characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Suspend returns cur with the change s applied at store time at.
func Suspend(s store.JobSuspend, cur store.Job, at time.Time) store.Job {
	cur.Suspension = store.Suspension{}
	if s.Suspend {
		cur.Suspension = store.Suspension{By: s.By, Reason: s.Reason, At: at}
	}
	return cur
}

// SuspendEvent returns the election log event store.Store.SuspendJob
// appends to the log of rec's name: the record as it is, Kind
// store.Suspended or store.Resumed, Detail "by WHO: WHY".
func SuspendEvent(seq uint64, rec store.Record, s store.JobSuspend, at time.Time) store.Event {
	kind := store.Resumed
	if s.Suspend {
		kind = store.Suspended
	}
	ev := NextEvent(seq, rec, kind)
	ev.Time = at
	ev.Detail = "by " + s.By
	if s.Reason != "" {
		ev.Detail += ": " + s.Reason
	}
	return ev
}

// CheckPrefer returns the error store.Store.PreferJob gives when the
// job's current state is cur (found false: no such job), nil when the
// change applies.
func CheckPrefer(p store.JobPrefer, cur store.Job, found bool) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("%w: changing a job's preference needs its name", store.ErrInvalid)
	case len(p.Prefer) > store.MaxReasonLen || !printable(p.Prefer):
		return fmt.Errorf("%w: a preference policy of printable text of at most %d bytes", store.ErrInvalid, store.MaxReasonLen)
	case p.Hysteresis < 0:
		return fmt.Errorf("%w: a negative hysteresis %v", store.ErrInvalid, p.Hysteresis)
	case !found:
		return fmt.Errorf("job %q: %w", p.Name, store.ErrNotFound)
	}
	return nil
}

// CheckJob returns the error store.Store.EnsureJob gives for a job whose
// preference (Prefer, PreferHysteresis) PreferJob would refuse.
func CheckJob(j store.Job) error {
	return CheckPrefer(store.JobPrefer{Name: j.Name, Prefer: j.Prefer, Hysteresis: j.PreferHysteresis}, j, true)
}

// Prefer returns job cur with the preference p.
func Prefer(p store.JobPrefer, cur store.Job) store.Job {
	cur.Prefer, cur.PreferHysteresis = p.Prefer, p.Hysteresis
	return cur
}

// PreferEvent returns the election log event store.Store.PreferJob
// appends to the log of rec's name, whose job was cur: the record as it
// is, Kind store.PreferChanged, Detail "FROM -> TO".
func PreferEvent(seq uint64, rec store.Record, p store.JobPrefer, cur store.Job, at time.Time) store.Event {
	ev := NextEvent(seq, rec, store.PreferChanged)
	ev.Time = at
	ev.Detail = store.PreferText(cur.Prefer, cur.PreferHysteresis) + " -> " + store.PreferText(p.Prefer, p.Hysteresis)
	return ev
}

// CheckSessionName returns the error store.Store.DeleteSession
// gives for a name that is not a session record's, nil for one that is.
// Backends call it before they read anything; CheckDeleteSession applies
// it too.
func CheckSessionName(name string) error {
	if !store.IsSession(name) {
		return fmt.Errorf("delete %q: %w: not a session record", name, store.ErrInvalid)
	}
	return nil
}

// CheckDeleteSession returns the error store.Store.DeleteSession
// gives when the record of name is cur (cur.Version == 0 when it does not
// exist) and the caller expects version expect, nil when the delete
// applies: only a free session record at the expected version is deleted.
func CheckDeleteSession(name string, cur store.Record, expect int64) error {
	if err := CheckSessionName(name); err != nil {
		return err
	}
	switch {
	case cur.Version == 0:
		return fmt.Errorf("delete %q: %w", name, store.ErrNotFound)
	case cur.Version != expect:
		return fmt.Errorf("delete %q: %w", name, store.ErrConflict)
	case !cur.Free():
		return fmt.Errorf("delete %q: %w: the session is held (only dead sessions are deleted)", name, store.ErrInvalid)
	}
	return nil
}

// CheckSuccessionSwap is CheckSwap for a store that keeps successions
// (store.Succeeder): cur is the current record as resolved (store.Resolve;
// its Version is what s.Expect is compared with), newToken the resolved
// token of s.Record, and successor the stored record that s.Record.Successor
// names (ok false: none). On top of CheckSwap's rules, a Successor is
// named only on a session record, only in the swap that ends it (held to
// free), only of another session record (else store.ErrInvalid), which
// must be held (else store.ErrConflict: the successor's session ended
// first); a dead session's Successor never changes.
func CheckSuccessionSwap(cur store.Record, s store.Swap, newToken uint64, successor store.Record, ok bool) error {
	return CheckSuccessionSwapAt(&cur, &s, newToken, &successor, ok)
}

// CheckSuccessionSwapAt is CheckSuccessionSwap of the records and the swap
// read in place, none of them changed: for a store that holds them where
// it can point to them (a record is large to copy, and a store checks
// every write).
func CheckSuccessionSwapAt(cur *store.Record, s *store.Swap, newToken uint64, successor *store.Record, ok bool) error {
	// CheckSwap of s without its successor, at the resolved token.
	if err := checkSwap(cur, &s.Record, s.Expect, newToken, ""); err != nil {
		return err
	}
	r := &s.Record
	switch {
	case store.IsSession(r.Name) && cur.Version != 0 && cur.Free() && r.Successor != cur.Successor:
		return fmt.Errorf("%w: session %q is dead and its successor never changes", store.ErrInvalid, r.Name)
	case r.Successor == "":
		return nil
	case !store.IsSession(r.Name):
		return fmt.Errorf("%w: record %q names a successor and is not a session record", store.ErrInvalid, r.Name)
	case cur.Version != 0 && cur.Free():
		return nil // the dead session's own successor, kept (above)
	case cur.Version == 0 || !r.Free():
		return fmt.Errorf("%w: session %q names a successor only in the swap that ends it", store.ErrInvalid, r.Name)
	case r.Successor == r.Name || !store.IsSession(r.Successor):
		return fmt.Errorf("%w: session %q cannot be succeeded by %q: a successor is another session record", store.ErrInvalid, r.Name, r.Successor)
	case !ok || successor.Free():
		// A race, not a bad request: the successor's own session ended
		// (or was never written) before this write arrived.
		return fmt.Errorf("%w: session %q cannot be succeeded by %q, which is not held", store.ErrConflict, r.Name, r.Successor)
	}
	return nil
}

// SuccessorFault returns what is wrong with the successor fields of r, a
// record as a store read it, or "" when nothing is: a successor only on a
// dead (free) session record, naming another session record, with that
// successor's holder kept; the successor's holder and incarnation only
// with a successor. No baton write makes such a record (another program
// wrote it), and resolving through it would hand names to whoever it
// says: each store refuses it as store.ErrCorrupt, saying where it read it.
func SuccessorFault(r store.Record) string {
	switch {
	case r.Successor == "" && (r.SuccessorHolder != "" || r.SuccessorIncarnation != ""):
		return "a successor's holder without a successor"
	case r.Successor == "":
		return ""
	case !store.IsSession(r.Name) || !store.IsSession(r.Successor):
		return fmt.Sprintf("successor %q, on a record that is not a session record's or naming one that is not", r.Successor)
	case r.Successor == r.Name:
		return "itself as its successor"
	case !r.Free():
		return fmt.Sprintf("successor %q on a session record held by %q", r.Successor, r.Holder)
	case r.SuccessorHolder == "":
		return fmt.Sprintf("successor %q named without its holder", r.Successor)
	}
	return ""
}

// CheckDeleteSucceeded returns the error store.Store.DeleteSession gives
// in a store that keeps successions when the dead session cur has a
// successor and referenced says some record still points at it (a name's
// stored record, or another dead session as its successor): it is kept,
// or those names would resolve to a dead session and be taken with a
// token already handed out. Nil when the delete applies.
func CheckDeleteSucceeded(name string, cur store.Record, referenced bool) error {
	if cur.Successor != "" && referenced {
		return fmt.Errorf("delete %q: %w: names still point at it through its successor %q (try again once its successor rewrote them)", name, store.ErrConflict, cur.Successor)
	}
	return nil
}

// SuccessionEvent returns the log event, numbered seq, of a succession
// that passed the record now (as store.Resolve's passed callback gives it)
// on from the dead session record dead: taken over after expiry, at the
// time the dead session was written dead, with store.SuccessionDetail. It
// is the event a store appends at the name's next write, and shows in
// History until then.
func SuccessionEvent(seq uint64, now, dead store.Record) store.Event {
	ev := NextEvent(seq, now, store.TakenOver)
	ev.Time, ev.Detail = dead.Updated, store.SuccessionDetail(dead.Name)
	return ev
}

// WithSuccessor returns the record a swap stores, rec, with the
// SuccessorHolder and SuccessorIncarnation a store keeps (a swap's own
// are ignored): none without a Successor; a dead session's own, kept
// from cur, the stored record; else those of successor, the successor's
// stored record, read in the same atomic step as the write that names it
// (CheckSuccessionSwap checked it is held).
func WithSuccessor(rec, cur, successor store.Record) store.Record {
	rec.SuccessorHolder, rec.SuccessorIncarnation = "", ""
	switch {
	case rec.Successor == "":
	case cur.Successor != "":
		rec.SuccessorHolder, rec.SuccessorIncarnation = cur.SuccessorHolder, cur.SuccessorIncarnation
	default:
		rec.SuccessorHolder, rec.SuccessorIncarnation = successor.Holder, successor.Incarnation
	}
	return rec
}

// ChainInto returns session and the dead session records whose chain of
// successors reaches it (store.Succeeder.HeldThrough lists the names held
// through any of them), given successors, each dead session record's
// Successor by name, as a store reads them from its session records: a
// tree in a store that follows the rules (each dead session names one
// successor); a hostile cycle is followed once.
func ChainInto(session string, successors map[string]string) []string {
	before := make(map[string][]string, len(successors))
	for name, succ := range successors {
		before[succ] = append(before[succ], name)
	}
	out := []string{session}
	seen := map[string]bool{session: true}
	for i := 0; i < len(out); i++ {
		next := before[out[i]]
		slices.Sort(next) // the map's order is random; the result's is not
		for _, p := range next {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
