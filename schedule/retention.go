package schedule

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/scheduler"
	"github.com/batonhq/baton/store"
)

// Retention says how long finished rows stay in the run ledger: a row is
// pruned once it is older than Age or once Rows newer rows exist,
// whichever comes first. A zero field sets no bound of its kind. Pruning
// never deletes the job's newest scheduled row (see store.Store.PruneRuns),
// nor a pending or running one.
type Retention struct {
	Age  time.Duration
	Rows int
}

// DefaultRetention keeps 30 days and at most 10,000 rows per job: a job
// run every second keeps under three hours, a daily one its last month.
var DefaultRetention = Retention{Age: 30 * 24 * time.Hour, Rows: 10000}

// String describes r for people: "30d or 10000 rows".
func (r Retention) String() string {
	var parts []string
	if r.Age > 0 {
		parts = append(parts, FormatAge(r.Age))
	}
	if r.Rows > 0 {
		parts = append(parts, strconv.Itoa(r.Rows)+" rows")
	}
	if len(parts) == 0 {
		return "forever"
	}
	return strings.Join(parts, " or ")
}

// FormatAge prints a whole number of days as "30d", anything else as a Go
// duration.
func FormatAge(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// ParseAge parses "30d" (days) or a Go duration such as "72h"; it must be
// positive.
func ParseAge(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * 24 * time.Hour
		if err == nil && days > 1<<20 {
			err = fmt.Errorf("too many days")
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("age %q: want a positive number of days such as 30d, or a duration such as 72h", s)
	}
	return d, nil
}

// Prune returns the store request that deletes job's finished rows past r
// at wall time now, in states, at most limit rows: rows older than r.Age
// (a period key below now - r.Age) or not among the r.Rows newest. The
// leader's machine builds its prunes with the same rule.
func (r Retention) Prune(job string, now time.Time, states []store.RunState, limit int) store.Prune {
	return scheduler.Retention(r).Prune(job, now, states, limit)
}

// PruneBatch is the number of rows one prune write deletes at most.
const PruneBatch = 500

// DefaultPruneEvery is how often a Runner with a retention (WithRetention)
// starts a prune round.
const DefaultPruneEvery = 10 * time.Minute

// WithRetention makes the Runner's leader prune the ledger: done and
// skipped rows past r are deleted in fenced writes of at most PruneBatch
// rows, a round every DefaultPruneEvery, while no period is due (due
// periods always come first). Failed rows are kept. The default is no
// retention: the ledger keeps every row.
func WithRetention(r Retention) Option {
	return func(cfg *config) error {
		cfg.Machine.Retention = scheduler.Retention(r)
		cfg.Machine.PruneEvery, cfg.Machine.PruneBatch = DefaultPruneEvery, PruneBatch
		return nil
	}
}

// Prune deletes the finished rows of job past retention r at wall time now,
// in writes of at most PruneBatch rows: done and skipped rows, and failed
// ones too when failed is true (a failed row is otherwise kept until it is
// re-run or pruned by hand). It is an operator's action, not fenced: it
// deletes only finished rows, which a leader never changes, except that
// a failed row may be re-triggered meanwhile (PruneRuns deletes a row only
// in a state it was asked to). It returns the number of rows deleted.
func Prune(ctx context.Context, st store.Store, job string, r Retention, now time.Time, failed bool) (int, error) {
	if r.Age <= 0 && r.Rows <= 0 {
		return 0, nil
	}
	states := []store.RunState{store.Done, store.Skipped}
	if failed {
		states = append(states, store.Failed)
	}
	total := 0
	for {
		n, err := st.PruneRuns(ctx, r.Prune(job, now, states, PruneBatch))
		total += n
		if err != nil || n < PruneBatch {
			return total, err
		}
	}
}
