package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The limits of one etcd transaction. A member refuses a transaction with
// more than --max-txn-ops operations in its compare list or in either
// branch (default 128: embed.DefaultMaxTxnOps) and a request larger than
// --max-request-bytes (default 1.5 MiB), and applies nothing of it. The
// batched calls (GetMany, SwapMany) cut their work into transactions
// within these defaults: txnOps operations per list (one of them the
// store's identity compare) and txnBytes of keys and values (below the
// 1.5 MiB with room for the request's framing). A cluster configured with
// lower limits refuses such a transaction; the call then halves both
// budgets for the rest of the handle's life and sends the refused chunk
// again in halves, so that it works there too, a little slower.
const (
	txnOps   = 128
	txnBytes = 1 << 20
)

// batchInFlight is how many transactions of one GetMany or SwapMany are in
// flight at once. The chunks of a batch touch disjoint keys and each swap
// is independent, so their order does not matter; sending them together
// lets the leader put them in one Raft proposal round instead of waiting a
// commit per chunk. See BenchmarkSwapMany1000 (bench_test.go) for the
// figures behind it.
var batchInFlight = 8

// opsBudget and bytesBudget return the handle's current limits of one
// transaction (see txnOps).
func (s *Store) opsBudget() int   { return txnOps >> s.shrink.Load() }
func (s *Store) bytesBudget() int { return txnBytes >> s.shrink.Load() }

// tooLarge reports whether the cluster refused a transaction for its size
// or its number of operations.
func tooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return false
	}
	st, ok := status.FromError(errors.Unwrap(err))
	return ok && st.Code() == codes.ResourceExhausted
}

// chunk is a run [lo, hi) of a batch's items that goes into one
// transaction.
type chunk struct{ lo, hi int }

// chunks cuts n items into runs within the handle's budgets: item i
// needs ops(i) operations in the transaction's largest list and about
// bytes(i) bytes of request. One item always gets a chunk of its own,
// even above the budgets: the cluster then refuses it and says why.
func (s *Store) chunks(n int, ops, bytes func(i int) int) []chunk {
	maxOps, maxBytes := s.opsBudget()-1, s.bytesBudget() // -1: the identity compare
	var out []chunk
	lo, o, b := 0, 0, 0
	for i := range n {
		oi, bi := ops(i), bytes(i)
		if i > lo && (o+oi > maxOps || b+bi > maxBytes) {
			out = append(out, chunk{lo, i})
			lo, o, b = i, 0, 0
		}
		o, b = o+oi, b+bi
	}
	if lo < n {
		out = append(out, chunk{lo, n})
	}
	return out
}

// inParallel runs f on every chunk, at most batchInFlight at once, and
// returns the first error (the others are cancelled). A chunk the cluster
// refuses as too large is split in halves and sent again, and the
// handle's budgets halve (down to one item per transaction).
func (s *Store) inParallel(ctx context.Context, cs []chunk, f func(ctx context.Context, c chunk) error) error {
	if len(cs) == 1 {
		return s.splitting(ctx, cs[0], f)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		sem   = make(chan struct{}, batchInFlight)
	)
	for _, c := range cs {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.splitting(ctx, c, f); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// Cancelled before every chunk was sent: by the caller's ctx.
		return s.unavailable(ctx, ctx, "batch", ctx.Err())
	}
	return first
}

func (s *Store) splitting(ctx context.Context, c chunk, f func(ctx context.Context, c chunk) error) error {
	err := f(ctx, c)
	if err == nil || c.hi-c.lo < 2 || !tooLarge(err) {
		return err
	}
	if n := s.shrink.Load(); n < 7 {
		s.shrink.CompareAndSwap(n, n+1)
	}
	mid := (c.lo + c.hi) / 2
	if err := s.splitting(ctx, chunk{c.lo, mid}, f); err != nil {
		return err
	}
	return s.splitting(ctx, chunk{mid, c.hi}, f)
}

// GetMany implements store.Store. It reads the records in one of two
// ways, both linearizable:
//
//   - a range read, when at least rangeMinNames names are asked for and
//     the key range from the first to the last of them holds at most
//     rangeMaxSpread records per name asked (a count of that range, keys
//     only, decides): the range in pages of rangePage records, all at the
//     revision of the first page, so the result is one snapshot;
//   - otherwise one read-only transaction of gets per chunk of names (up
//     to 127), chunks in parallel; each transaction is a linearizable read
//     of its records, the batch as a whole is not one snapshot.
//
// On a three-member cluster a range read of 1,000 records costs about a
// quarter of 1,000 gets in transactions (BenchmarkGetMany1000); the count
// keeps it from reading many records nobody asked for. The records read
// are remembered, so that a SwapMany on them (a bulk takeover) needs no
// read of its own.
func (s *Store) GetMany(ctx context.Context, names []string) ([]store.GetResult, error) {
	res := make([]store.GetResult, len(names))
	if len(names) == 0 {
		return res, nil
	}
	if len(names) >= rangeMinNames {
		done, err := s.getRange(ctx, names, res)
		if err != nil {
			return nil, err
		}
		if done {
			return res, nil
		}
	}
	return s.getTxns(ctx, names, res)
}

// When GetMany reads a range (see GetMany). rangeMinNames is a variable
// for the benchmark that compares both ways.
var rangeMinNames = 256

const (
	rangeMaxSpread = 2
	rangePage      = 2000
)

// getRange fills res by range reads if the names' key range is dense
// enough (see GetMany), and reports whether it did.
func (s *Store) getRange(ctx context.Context, names []string, res []store.GetResult) (bool, error) {
	want := make(map[string][]int, len(names))
	from, last := "", ""
	for i, name := range names {
		k := s.keys.record(name)
		if from == "" || k < from {
			from = k
		}
		last = max(last, k)
		want[k] = append(want[k], i)
	}
	end := last + "\x00"
	count, err := s.get(ctx, "count records", from, clientv3.WithRange(end), clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	if count.Count > int64(rangeMaxSpread*len(want)) {
		return false, nil
	}
	var rev int64
	var cs []*cached
	var idxs [][]int
	for key := from; ; {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(rangePage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.get(ctx, fmt.Sprintf("read up to %d records", rangePage), key, opts...)
		if err != nil {
			return false, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			idx, ok := want[string(kv.Key)]
			if !ok {
				continue
			}
			cur, err := decodeRecord(names[idx[0]], kv)
			if err != nil {
				return false, err
			}
			cs, idxs = append(cs, &cur), append(idxs, idx)
			delete(want, string(kv.Key))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	// The sessions of the range's records, at the range's revision.
	if err := s.resolveAt(ctx, rev, cs, nil); err != nil {
		return false, err
	}
	for j, cur := range cs {
		s.remember(cur.stored.Name, *cur)
		for _, i := range idxs[j] {
			res[i].Record = cur.rec
		}
	}
	for _, idx := range want {
		name := names[idx[0]]
		s.forget(name)
		for _, i := range idx {
			res[i].Err = fmt.Errorf("election %q: %w", name, store.ErrNotFound)
		}
	}
	return true, nil
}

// getTxns fills res with one read-only transaction of gets per chunk of
// names, chunks in parallel.
func (s *Store) getTxns(ctx context.Context, names []string, res []store.GetResult) ([]store.GetResult, error) {
	err := s.inParallel(ctx, s.chunks(len(names), one, func(i int) int { return 2*len(names[i]) + 16 }),
		func(ctx context.Context, c chunk) error {
			ops := make([]clientv3.Op, 0, c.hi-c.lo)
			for _, name := range names[c.lo:c.hi] {
				ops = append(ops, clientv3.OpGet(s.keys.record(name)))
			}
			resp, err := s.txn(ctx, fmt.Sprintf("get %d records", len(ops)), nil, ops, nil)
			if err != nil {
				return err
			}
			cs := make([]*cached, 0, len(ops))
			for j, name := range names[c.lo:c.hi] {
				cur, err := decodeRecord(name, rangeKV(resp, j))
				if err != nil {
					return err
				}
				cs = append(cs, &cur)
			}
			// The chunk's sessions, at the chunk's revision.
			if err := s.resolveAt(ctx, resp.Header.Revision, cs, nil); err != nil {
				return err
			}
			for j, cur := range cs {
				name := names[c.lo+j]
				if cur.modRev == 0 {
					res[c.lo+j].Err = fmt.Errorf("election %q: %w", name, store.ErrNotFound)
					s.forget(name)
					continue
				}
				s.remember(name, *cur)
				res[c.lo+j].Record = cur.rec
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func one(int) int { return 1 }

// SwapMany implements store.Store. etcd transactions are
// all-or-nothing, while each swap of a batch must succeed or fail on its
// own, so SwapMany sends one transaction per chunk comparing every swap's
// version; when one fails, the records read in its else branch show which
// swaps conflict, those get ErrConflict, and the rest are sent again (each
// round removes at least one swap). A chunk holds up to 127 swaps, fewer
// when some of them move a record's log events to a log key (see txnOps
// and inlineEvents), and up to batchInFlight chunks are in flight at once:
// a batch of 1,000 takeovers is 8 or 9 transactions, sent together. In steady state (swaps of records this handle read or
// wrote, as after GetMany) there is no other round trip; records the
// handle has not seen at the expected version are read first, in chunks
// as GetMany reads. Swaps that fail validation (ErrInvalid) are not sent.
// A name that appears more than once is swapped after the batch, in order,
// as by Swap. If a transaction fails as a whole (ErrUnavailable), SwapMany
// returns that error: other chunks may have been applied.
func (s *Store) SwapMany(ctx context.Context, swaps []store.Swap) ([]store.SwapResult, error) {
	res := make([]store.SwapResult, len(swaps))
	seen := make(map[string]bool, len(swaps))
	var batch, later []int
	for i, sw := range swaps {
		switch {
		case sw.Record.Name == "":
			res[i].Err = storedriver.CheckSwap(store.Record{}, sw)
		case seen[sw.Record.Name]:
			later = append(later, i)
		default:
			seen[sw.Record.Name] = true
			batch = append(batch, i)
		}
	}
	got := map[string]cached{}
	if err := s.readMissing(ctx, swaps, batch, got); err != nil {
		return nil, err
	}
	now := s.now()
	var ready []prepared
	for _, i := range batch {
		cur, ok := s.cachedAt(swaps[i].Record.Name, swaps[i].Expect)
		switch {
		case swaps[i].Expect == 0:
			// A record that does not exist has no log yet: records are
			// never deleted (but sessions). The transaction checks that
			// it does not exist.
			r := store.Record{Name: swaps[i].Record.Name}
			cur = cached{stored: r, rec: r}
		case !ok:
			// The read found another version (or no record): conflict.
			cur = s.latest(swaps[i].Record.Name)
		}
		p, err := s.prepare(cur, swaps[i], now, got)
		if err != nil {
			res[i].Err = err
			continue
		}
		p.idx = i
		ready = append(ready, p)
	}
	err := s.inParallel(ctx, s.swapChunks(ready), func(ctx context.Context, c chunk) error {
		left := ready[c.lo:c.hi:c.hi]
		for round := 0; len(left) > 0; round++ {
			if round == swapRounds {
				return fmt.Errorf("etcd swap: %w: the records or their sessions changed %d times during the write; try again", store.ErrUnavailable, swapRounds)
			}
			var err error
			if left, err = s.swapRound(ctx, left, res, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, i := range later {
		rec, err := s.Swap(ctx, swaps[i])
		if err != nil && !isPerSwap(err) {
			return nil, err
		}
		res[i] = store.SwapResult{Record: rec, Err: err}
	}
	return res, nil
}

// swapRounds bounds the transactions of one chunk of SwapMany. Each round
// settles at least one swap, unless a record's session record changed
// under it (a renewal) while the record did not: then it is sent again
// with the session as it is now.
const swapRounds = 8

// swapChunks cuts ready into transactions within the handle's budgets: a
// swap needs its writes, its compares and the else branch's reads of the
// compared keys, and a compare that several swaps of a chunk share (the
// session record a bulk takeover's names are held through) is sent once.
func (s *Store) swapChunks(ready []prepared) []chunk {
	maxOps, maxBytes := s.opsBudget()-1, s.bytesBudget() // -1: the identity compare
	var out []chunk
	lo, writes, cmps, b := 0, 0, 0, 0
	in := map[guard]bool{}
	for i, p := range ready {
		wi, ci, bi := len(p.ops), 0, p.size()
		for _, g := range p.guards {
			if !in[g] {
				ci++
			}
		}
		if i > lo && (writes+wi > maxOps || cmps+ci > maxOps || b+bi > maxBytes) {
			out = append(out, chunk{lo, i})
			lo, writes, cmps, b = i, 0, 0, 0
			clear(in)
			ci = len(p.guards)
		}
		for _, g := range p.guards {
			in[g] = true
		}
		writes, cmps, b = writes+wi, cmps+ci, b+bi
	}
	if lo < len(ready) {
		out = append(out, chunk{lo, len(ready)})
	}
	return out
}

// distinctGuards returns the guards of ps, each once, in order.
func distinctGuards(ps []prepared) []guard {
	seen := map[guard]bool{}
	var out []guard
	for _, p := range ps {
		for _, g := range p.guards {
			if !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// size is about how many bytes p adds to a transaction request: its
// compares, its writes and its else-branch reads.
func (p prepared) size() int {
	n := 0
	for _, g := range p.guards {
		n += 2*len(g.key) + 32
	}
	for _, o := range p.ops {
		n += len(o.KeyBytes()) + len(o.ValueBytes()) + 16
	}
	return n
}

// isPerSwap reports whether err is the outcome of one swap rather than a
// failure of the write as a whole.
func isPerSwap(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrInvalid)
}

// latest returns this handle's memory of name, resolved with the session
// records it knows, or an absent record.
func (s *Store) latest(name string) cached {
	s.mu.Lock()
	c, ok := s.cache[name]
	s.mu.Unlock()
	if !ok {
		r := store.Record{Name: name}
		return cached{stored: r, rec: r}
	}
	if _, err := resolveIn(&c, s.known(nil)); err != nil {
		c.rec = c.stored
	}
	return c
}

// readMissing reads, as GetMany does, the records of the swaps in batch
// that this handle has not seen at the expected version (resolved with the
// session records it knows), and then into got the session records that
// the new records are held through or name as successor and that the
// handle has not seen.
func (s *Store) readMissing(ctx context.Context, swaps []store.Swap, batch []int, got map[string]cached) error {
	var names []string
	for _, i := range batch {
		sw := swaps[i]
		if sw.Expect == 0 {
			continue
		}
		if _, ok := s.cachedAt(sw.Record.Name, sw.Expect); !ok {
			names = append(names, sw.Record.Name)
		}
	}
	if len(names) > 0 {
		if _, err := s.GetMany(ctx, names); err != nil {
			return err
		}
	}
	var sessions []string
	seen := map[string]bool{}
	lookup := s.known(nil)
	for _, i := range batch {
		r := swaps[i].Record
		for _, n := range []string{r.Session, r.Successor} {
			if _, ok := lookup(n); n != "" && store.IsSession(n) && !ok && !seen[n] {
				seen[n] = true
				sessions = append(sessions, n)
			}
		}
	}
	if len(sessions) == 0 {
		return nil
	}
	return s.readSessions(ctx, 0, sessions, got)
}

func (s *Store) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cache, name)
}

// swapRound sends one transaction for ready (one chunk) and records the
// results; it returns the swaps to send again. When the transaction
// fails, its else branch has read every compared key: a swap whose own
// compares held is sent again as it is (another swap's failed); the
// others are resolved again from what was read (and the further session
// records their chains pass, at the same revision) and fail with the
// conflict, or, when the record is still at the version expected (its
// session renewed, or Settle rewrote it), are prepared again.
func (s *Store) swapRound(ctx context.Context, ready []prepared, res []store.SwapResult, now time.Time) ([]prepared, error) {
	gs := distinctGuards(ready)
	cmps := make([]clientv3.Cmp, len(gs))
	els := make([]clientv3.Op, len(gs))
	for j, g := range gs {
		cmps[j], els[j] = g.cmp(), clientv3.OpGet(g.key)
	}
	var then []clientv3.Op
	for _, p := range ready {
		then = append(then, p.ops...)
	}
	resp, err := s.txn(ctx, fmt.Sprintf("swap %d records", len(ready)), cmps, then, els)
	if err != nil {
		return nil, err
	}
	if resp.Succeeded {
		for _, p := range ready {
			p.rec.Version = resp.Header.Revision
			s.remember(p.sw.Record.Name, cached{stored: p.rec, modRev: resp.Header.Revision, logSeq: p.logSeq, events: p.events})
			res[p.idx] = store.SwapResult{Record: p.rec}
		}
		return nil, nil
	}
	rev := resp.Header.Revision
	kvs := map[string]*mvccpb.KeyValue{}
	got := map[string]cached{}
	for j, g := range gs {
		kv := rangeKV(resp, j)
		kvs[g.key] = kv
		if g.name != "" && store.IsSession(g.name) {
			c, err := decodeRecord(g.name, kv)
			if err != nil {
				return nil, err
			}
			got[g.name] = c
			s.remember(g.name, c)
		}
	}
	held := func(g guard) bool {
		var v int64
		if kv := kvs[g.key]; kv != nil {
			v = kv.ModRevision
		}
		return v == g.rev
	}
	var left []prepared
	for _, p := range ready {
		ok := true
		for _, g := range p.guards {
			ok = ok && held(g)
		}
		if ok {
			left = append(left, p)
			continue
		}
		name := p.sw.Record.Name
		cur, err := decodeRecord(name, kvs[p.key])
		if err != nil {
			return nil, err
		}
		if err := s.resolveAt(ctx, rev, []*cached{&cur}, got); err != nil {
			res[p.idx].Err = err
			continue
		}
		if cur.modRev == 0 {
			s.forget(name)
		}
		s.remember(name, cur)
		if cur.rec.Version != p.sw.Expect {
			res[p.idx].Err = s.conflict(cur, p)
			continue
		}
		if p.rec.Session != "" && !held(s.notDeleting(p.rec.Session)) {
			res[p.idx].Err = fmt.Errorf("%w: session %q of %q is being deleted (DeleteSession)", store.ErrConflict, p.rec.Session, name)
			continue
		}
		np, err := s.prepare(cur, p.sw, now, got)
		if err != nil {
			res[p.idx].Err = err
			continue
		}
		np.idx = p.idx
		left = append(left, np)
	}
	return left, nil
}
