package inspect

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// The states of a session record, as 'baton sessions' shows them.
const (
	// SessionLive: held, renewed within its lease by store time.
	SessionLive = "live"
	// SessionExpired: held, but not renewed for more than its lease by
	// store time (probably dead: a flag, not a decision). A contender for
	// one of its names ends it after lease + 2e on its own clock.
	SessionExpired = "expired"
	// SessionDead: free. It never becomes held again; a Group deletes it
	// after a grace.
	SessionDead = "dead"
)

// Session is one session record as 'baton sessions' shows it.
type Session struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	Holder      string `json:"holder,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	// Names is how many names point at the session (never nil when
	// Sessions returns it).
	Names *int `json:"names,omitempty"`
	// Written is the store's time of the record's last write: the last
	// renewal of a live session, the end of a dead one.
	Written             time.Time `json:"written"`
	SinceWrittenSeconds float64   `json:"since_written_seconds"`
	LeaseSeconds        float64   `json:"lease_seconds"`
}

// Sessions lists the session records of st with their states at the
// store's time now, a page at a time, and how many names point at each
// (Store.CountHolders).
func Sessions(ctx context.Context, st store.Store, now time.Time) ([]Session, error) {
	groups, _, err := st.CountHolders(ctx, now)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, g := range groups {
		if g.Session != "" {
			counts[g.Session] += g.Names
		}
	}
	out := []Session{}
	after := ""
	for {
		names, err := st.NamesPage(ctx, store.NameQuery{After: after, Prefix: store.SessionPrefix, Limit: MaxLimit})
		if err != nil {
			return nil, err
		}
		recs, err := getMany(ctx, st, names)
		if err != nil {
			return nil, err
		}
		for i, n := range names {
			r := recs[i]
			if r == nil {
				continue // deleted since the listing
			}
			s := Session{Name: n, Holder: r.Holder, Incarnation: r.Incarnation, Written: r.Updated.UTC(),
				SinceWrittenSeconds: bound.Seconds(max(now.Sub(r.Updated), 0).Round(time.Millisecond)), LeaseSeconds: bound.Seconds(r.Lease)}
			switch {
			case r.Free():
				s.State = SessionDead
			case now.Sub(r.Updated) > r.Lease:
				s.State = SessionExpired
			default:
				s.State = SessionLive
			}
			c := counts[n]
			s.Names = &c
			out = append(out, s)
		}
		if len(names) < MaxLimit {
			return out, nil
		}
		after = names[len(names)-1]
	}
}
