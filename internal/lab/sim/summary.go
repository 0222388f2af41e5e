package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/lab/vcluster"
)

// Summary adds up many seeds.
type Summary struct {
	Seeds     int
	Simulated time.Duration
	Events    int
	Checks    int
	Periods   int
	Faults    map[vcluster.FaultKind]int
	Rejected  int
	Beyond    int // seeds with a clock beyond the margin
	Balanced  int // seeds run balanced
	Hostile   int // seeds run at the edges of the ranges (hostile.go)
	// Successions and Adopted: dead sessions passed on to a successor,
	// and terms taken from a record so passed on (Config.Succession).
	Successions, Adopted int
	// Forged counts the notifications a forging client sent
	// (vcluster.Config.Forge).
	Forged int
	// Settled, Deleted and DeletedSucceeded: names settled onto a
	// successor and dead session records deleted (those with a successor
	// among them) by the nodes' collection (vcluster.Collect);
	// LongestChain the longest chain of successions a seed formed (hops),
	// and Chained the seeds with a chain of two or more.
	Settled, Deleted, DeletedSucceeded int
	LongestChain, Chained              int
	// Preferring counts the seeds that drew a preference policy
	// (Options.Prefer), Preferred their handovers of the job to a
	// preferred candidate.
	Preferring, Preferred int
	// Deferred counts the takeovers the deferral check judged: by a
	// contender that knew a live candidate preferred to it.
	Deferred   int
	Violations []Result
	Elapsed    time.Duration
}

// RunSeeds runs count seeds from first on, in parallel on every CPU, and
// adds them up. Violations are listed in seed order.
func RunSeeds(ctx context.Context, o Options, first uint64, count int) (Summary, error) {
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	if count < 1 || first+uint64(count-1) < first {
		return Summary{}, fmt.Errorf("sim: seeds %d to %d+%d-1: want at least one seed, none past %d", first, first, count, uint64(math.MaxUint64))
	}
	start := time.Now()
	s := Summary{Faults: map[vcluster.FaultKind]int{}}
	var mu sync.Mutex
	var firstErr error
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				r, err := Run(ctx, o, seed)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("seed %d: %w", seed, err)
				}
				s.Seeds++
				s.Simulated = bound.Add(s.Simulated, r.Simulated) // hostile seeds run up to 480h each
				s.Events += r.Events
				s.Checks += r.Checks
				s.Periods += r.Periods
				s.Rejected += r.Rejected
				if r.Beyond {
					s.Beyond++
				}
				if r.Balanced {
					s.Balanced++
				}
				if r.Hostile {
					s.Hostile++
				}
				s.Successions += r.Covered.Successions
				s.Adopted += r.Covered.Adopted
				s.Forged += r.Covered.Forged
				s.Settled += r.Covered.Settled
				s.Deleted += r.Covered.Deleted
				s.DeletedSucceeded += r.Covered.DeletedSucceeded
				s.LongestChain = max(s.LongestChain, r.Covered.LongestChain)
				if r.Covered.LongestChain >= 2 {
					s.Chained++
				}
				if r.Prefer {
					s.Preferring++
				}
				s.Preferred += r.Covered.Preferred
				s.Deferred += r.Covered.Deferred
				for k, v := range r.Faults {
					s.Faults[k] += v
				}
				if r.Violation != nil {
					s.Violations = append(s.Violations, r)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < count && ctx.Err() == nil; i++ {
		seeds <- first + uint64(i)
	}
	close(seeds)
	wg.Wait()
	sort.Slice(s.Violations, func(i, j int) bool { return s.Violations[i].Seed < s.Violations[j].Seed })
	s.Elapsed = time.Since(start)
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return s, firstErr
}

// String is the summary line and the fault counts.
func (s Summary) String() string {
	var kinds []string
	for k, v := range s.Faults {
		kinds = append(kinds, fmt.Sprintf("%v %d", k, v))
	}
	sort.Strings(kinds)
	rate := float64(s.Seeds) / s.Elapsed.Seconds()
	perSeed := 0
	if s.Seeds > 0 {
		perSeed = s.Events / s.Seeds
	}
	prefer := ""
	if s.Preferring > 0 {
		prefer = fmt.Sprintf("%d seeds with a preference (%d handovers to a preferred candidate, %d takeovers by a contender that knew a preferred one), ", s.Preferring, s.Preferred, s.Deferred)
	}
	return fmt.Sprintf("%d seeds, %v simulated, %d events (%d a seed), %d invariant checks, %d periods checked for liveness, %d stale writes rejected by fences (%d seeds with clocks beyond the margin), %d seeds balanced, %d hostile, %d notifications forged, %d sessions passed on by succession (%d terms adopted), %d names settled, %d dead sessions deleted (%d passed on), chains up to %d successions (%d seeds with 2 or more), %s%d violations; %.0f seeds/s\nfaults injected: %s\n",
		s.Seeds, s.Simulated, s.Events, perSeed, s.Checks, s.Periods, s.Rejected, s.Beyond, s.Balanced, s.Hostile, s.Forged, s.Successions, s.Adopted,
		s.Settled, s.Deleted, s.DeletedSucceeded, s.LongestChain, s.Chained, prefer, len(s.Violations), rate, strings.Join(kinds, ", "))
}
