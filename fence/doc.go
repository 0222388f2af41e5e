// Package fence is the resource side of baton: it decides whose work is
// accepted, where an election only decides who believes it is the leader.
//
// Every term an election grants carries a fencing token, raised by one on
// every change of leader and never lowered. The leader sends its token with
// every piece of work. The protected resource keeps the highest token it has
// accepted per name and accepts work only if its token is at least that
// high, raising the highest to it, atomically with the work. Work with a
// lower token comes from a deposed leader: it gets an error wrapping
// ErrStaleToken, and nothing of it is applied.
//
// # Why election alone is not enough
//
// An election cannot stop a leader that is paused. A process can check that
// its term is valid, then stop (a long garbage-collection pause, SIGSTOP, a
// frozen virtual machine, a slow disk) past the end of its lease while
// another node is elected, and then wake up and act, believing it still
// leads. No lease, clock margin or Valid() check closes that gap, because the
// pause can fall between the check and the act. Only the resource can refuse
// the late work, and only if it can tell the old leader from the new one:
// that is the token. Election alone keeps two nodes from holding a valid
// lease at the same time; it cannot keep a node from acting on a lease that
// has since run out. Fencing does.
//
// # The forms
//
//   - Guard, for a resource that is a Go process: Do runs a function only
//     for a current token, under a lock per name.
//   - CheckTx, for a SQL database (SQLite, PostgreSQL): one upsert in the
//     caller's own transaction, so that the check commits or rolls back
//     with the work.
//   - Middleware and SetHeaders, for an HTTP service: the token travels in
//     the Baton-Token request header and a Guard checks it.
//   - HoldTx, after a committed CheckTx, for work whose effect is outside
//     the database: the name's fence stays held until the work is done.
//   - Package fenceproxy (`baton fence proxy`), for an HTTP service in
//     any language: a reverse proxy that forwards a request only with a
//     current Baton-Token, keeping the fence in SQLite or PostgreSQL.
//   - Env and FromEnv, for a command started by `baton run`: the name and
//     token travel in environment variables, and the command passes them on
//     to the resources it writes.
//   - SQL, for a command in any language: the PostgreSQL function
//     baton_fence(name, token[, sig]) that pgfence.Install (baton fence
//     install) puts in the database, raising SQLSTATE BF001 for a stale
//     token; for SQLite, SQLiteDDL's triggers and the statement
//     SQLiteCheck. Both share their table with CheckTx and pgfence.
//
// # Authenticated tokens
//
// A resource given a Key (NewSignedGuard, Dialect.WithKey,
// pgfence.CheckSigned) accepts only tokens that carry the key's signature,
// an HMAC-SHA256 of the name and the token: baton run hands it to its
// command as BATON_TOKEN_SIG next to BATON_TOKEN (--fence-key-file), and a
// program holding a baton.Term gets it from Term.SignedToken. A token
// without a valid signature is refused with ErrBadSignature (403 Forbidden
// over HTTP) and does not move the fence. Token 0 is refused everywhere.
//
// Recovering a resource that already accepted a forged token (its highest
// is above any token the election has issued, so the real leader's work is
// refused as stale): first give the resource a key, so that it cannot
// happen again; then either raise the election above the forged token,
// with `baton store floor NAME FORGED` (the next leader gets FORGED+1),
// when the forged token is below the largest the store holds, or put the
// resource's highest back to the election's current token (baton status
// NAME shows it): for CheckTx and pgfence, UPDATE baton_fence SET token =
// CURRENT WHERE name = 'NAME', with the leader stopped (on SQLite with
// SQLiteDDL's triggers, DROP TRIGGER baton_fence_stale first and run
// SQLiteDDL again after); for a Guard,
// restart the process. Work the forger did under the forged token is the
// forger's; the fence cannot tell it apart afterwards.
//
// # What it guarantees
//
// For one name and one fenced resource: once work with token t has been
// applied, no work with a token below t is applied afterwards; work with
// equal tokens is accepted repeatedly (a leader does many writes in one
// term). The check and the work are atomic, so work that passed the check is
// never overtaken in between by a newer leader's work.
//
// # What it does not guarantee
//
//   - Atomicity reaches only as far as the check's own lock or transaction.
//     A Guard fences only what runs inside its Do (or behind its
//     Middleware) in this process; CheckTx fences only what commits in the
//     same transaction. Work done elsewhere, or before the check, is not
//     fenced: Guard.Check alone, followed by a separate effect, leaves a gap.
//   - A Guard keeps its highest tokens in memory; after a restart it accepts
//     any token until it sees a new one. CheckTx keeps them in the database.
//   - Without a Key, tokens are not authenticated: anyone who can reach the
//     resource can send a forged high token (Baton-Token:
//     18446744073709551615) and shut out the real leader for good. Give the
//     resource a Key (see below).
//   - Fencing does not make work exactly-once. A leader deposed after its
//     work was applied but before it recorded that fact leaves the new
//     leader to find out; baton's run ledger does that.
//   - Separate resources are fenced separately; a fence does not make work
//     across two resources atomic.
//
// # The fence log
//
// Opt-in, the fence keeps its own record of what it answered, for `baton
// verify` to prove from it that every period was accepted exactly once:
// Dialect.WithLog makes CheckWriteTx add an "accepted" row (name, token,
// period, time) in the caller's transaction, so the row exists if and
// only if the work committed, and LogRefusal add a "refused" row after
// the rollback, best effort. Guard.SetLog logs a Guard's answers, also
// best effort (its work is in memory: no row is atomic with it); with a
// Guard, Middleware logs the period of the HeaderPeriod header. ReadLog
// reads the log and PruneLog deletes old rows (`baton prune --fence-db`).
// Package pgfence writes the same table with CheckLogged.
package fence
