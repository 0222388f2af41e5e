package sqlite

import (
	"context"
	"encoding/json"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// A batch of takes (a takeover of many names, or a release of many) is
// written with one UPDATE for all its records and one INSERT ... SELECT for
// all its log events, instead of swapRows' read of every record, a
// decision in Go and multi-row writes that bind ten parameters a record
// (about a third less time a batch: BenchmarkTakeover100k, figures in
// BENCHMARKS.md). It decides exactly as storedriver.CheckSwap does:
//
//   - takes checks, once per swap, every rule that does not depend on the
//     stored record (CheckSwap against the record the swap expects);
//   - the UPDATE writes a record only where it is at the version the
//     swap expects (CheckSwap's version rule), and sets its token to the
//     stored one raised by one for a take, kept for a release: what every
//     take and release of the election machine asks for;
//   - takeTx compares each token written with the swap's: if any differs
//     (a caller asked for another token, which may be refused: CheckSwap's
//     token rules), the UPDATE is undone (a savepoint) and swapRows
//     decides the whole batch; CheckSwap's rule for session records does
//     not arise, as takes leaves those out;
//   - a swap the UPDATE did not apply goes through swapRows, which reads
//     the record and returns CheckSwap's error for it, or, for a name a
//     succession passed on (the UPDATE leaves those: notPassedOnElection),
//     settles it and decides the swap against the resolved record.
const (
	// takeStmt writes the records of the takes in the JSON object ?8,
	// name: expected version, all with the same holder, incarnation,
	// lease, transfer and session, their tokens raised by ?9 (1 or 0), at
	// version ?5 (also their changed column: the change feed reports
	// them) and store time ?6, and their log_seq raised by one: the
	// sequence number of the event takeLogStmt appends for each. Every
	// take of the batch gets the same version: one above the counter and
	// every expected version, as swapRows would give the first of them.
	takeStmt = takeHead + ` AND ` + notPassedOnElection + takeTail
	// takePlainStmt is takeStmt without the condition on the stored
	// session, for a transaction that found no dead session with a
	// successor in the store (anyPassedOnStmt): then no name can be
	// passed on, and the condition, a probe of the session's row per
	// name, would cost a bulk takeover a sixth more for nothing.
	takePlainStmt = takeHead + takeTail
	takeHead      = `UPDATE baton_election SET holder = ?1, incarnation = ?2, token = token + ?9, lease_ns = ?3,
			transfer = ?4, version = ?5, changed = ?5, updated_ns = ?6, session = ?7, log_seq = log_seq + 1
		FROM json_each(?8) AS j
		WHERE baton_election.name = j.key AND baton_election.version = j.value`
	takeTail = `
		RETURNING baton_election.name, baton_election.token`
	// anyPassedOnStmt says whether some dead session record names a
	// successor: a range of the session records, few (the collector
	// deletes the dead ones), in the write transaction, so that no
	// succession can land between it and the statement it chooses.
	anyPassedOnStmt = `SELECT EXISTS (SELECT 1 FROM baton_election
		WHERE name >= '` + store.SessionPrefix + `' AND name < '` + sessionPrefixEnd + `' AND holder = '' AND successor <> '')`
	// takeLogStmt appends the event ?1 of every record takeStmt wrote at
	// version ?2 (no other record has that changed value: it is above
	// the counter), each at the sequence number takeStmt raised log_seq
	// to: after its name's newest event, without reading the log.
	takeLogStmt = `INSERT INTO baton_election_log (name, seq, kind, holder, incarnation, token, transfer, time_ns)
		SELECT e.name, e.log_seq,
			?1, e.holder, e.incarnation, e.token, e.transfer, e.updated_ns
		FROM baton_election e WHERE e.changed = ?2`
)

// takes reports whether swaps can be written by takeTx: at least two,
// each of an existing record (Expect > 0) of a distinct name that is not a
// session record, with an event, the same holder, incarnation, lease,
// transfer, session and event as the first, and valid by every rule of
// storedriver.CheckSwap that does not depend on the stored record.
func takes(swaps []store.Swap) bool {
	if len(swaps) < 2 {
		return false
	}
	first := swaps[0]
	seen := make(map[string]struct{}, len(swaps))
	for _, sw := range swaps {
		r := sw.Record
		if sw.Expect <= 0 || sw.Event == "" || sw.Event != first.Event || store.IsSession(r.Name) ||
			r.Holder != first.Record.Holder || r.Incarnation != first.Record.Incarnation || r.Lease != first.Record.Lease ||
			r.Transfer != first.Record.Transfer || r.Session != first.Record.Session {
			return false
		}
		if _, dup := seen[r.Name]; dup {
			return false
		}
		seen[r.Name] = struct{}{}
		// The record as the swap expects it: the rules left are those
		// of the swap itself (name, token bound, session, incarnation).
		expected := store.Record{Name: r.Name, Holder: r.Holder, Token: r.Token, Version: sw.Expect}
		if storedriver.CheckSwap(expected, sw) != nil {
			return false
		}
	}
	return true
}

// takeTx writes the swaps (takes(swaps) holds) in b's transaction with the
// counter at last. It returns each swap's result, the indexes of the swaps
// it did not apply (their results are for the caller to fill), and the
// counter's new value.
func (s *Store) takeTx(ctx context.Context, b *bound, swaps []store.Swap, last int64) (res []store.SwapResult, rest []int, v int64, err error) {
	v = last
	rows := make(map[string]int64, len(swaps))
	want := make(map[string]uint64, len(swaps))
	for _, sw := range swaps {
		v = max(v, sw.Expect)
		rows[sw.Record.Name] = sw.Expect
		want[sw.Record.Name] = sw.Record.Token
	}
	v++
	arg, err := json.Marshal(rows)
	if err != nil {
		return nil, nil, 0, err
	}
	r0 := swaps[0].Record
	var raise int64 // a take raises the token by one, a release keeps it
	if r0.Holder != "" {
		raise = 1
	}
	take := s.st.take
	var passedOn bool
	if err := b.stmt(s.st.anyPassedOn).QueryRowContext(ctx).Scan(&passedOn); err != nil {
		return nil, nil, 0, err
	}
	if !passedOn {
		take = s.st.takePlain
	}
	if _, err := b.tx.ExecContext(ctx, `SAVEPOINT take`); err != nil {
		return nil, nil, 0, err
	}
	now := s.now()
	q, err := b.stmt(take).QueryContext(ctx, r0.Holder, r0.Incarnation, int64(r0.Lease), r0.Transfer, v, now.UnixNano(), r0.Session, string(arg), raise)
	if err != nil {
		return nil, nil, 0, err
	}
	applied := make(map[string]struct{}, len(swaps))
	exact := true
	for q.Next() {
		var name string
		var token int64
		if err := q.Scan(&name, &token); err != nil {
			q.Close()
			return nil, nil, 0, err
		}
		applied[name] = struct{}{}
		exact = exact && uint64(token) == want[name]
	}
	q.Close()
	if err := q.Err(); err != nil {
		return nil, nil, 0, err
	}
	if !exact || len(applied) == 0 {
		// A swap whose token is not the stored one raised by one (kept,
		// for a release): undone, and the general path decides all.
		for _, q := range []string{`ROLLBACK TO take`, `RELEASE take`} {
			if _, err := b.tx.ExecContext(ctx, q); err != nil {
				return nil, nil, 0, err
			}
		}
		return make([]store.SwapResult, len(swaps)), allIndexes(len(swaps)), last, nil
	}
	if _, err := b.tx.ExecContext(ctx, `RELEASE take`); err != nil {
		return nil, nil, 0, err
	}
	if _, err := b.stmt(s.st.takeLog).ExecContext(ctx, string(swaps[0].Event), v); err != nil {
		return nil, nil, 0, err
	}
	res = make([]store.SwapResult, len(swaps))
	for i, sw := range swaps {
		if _, ok := applied[sw.Record.Name]; !ok {
			rest = append(rest, i)
			continue
		}
		rec := sw.Record
		rec.Version, rec.Updated = v, now
		res[i].Record = rec
	}
	return res, rest, v, nil
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
