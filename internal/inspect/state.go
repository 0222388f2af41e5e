package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/election"
	"github.com/batonhq/baton/store"
)

// The states a name can be in, as every view shows them (StateOf).
const (
	// Free: nobody holds the name (or it has no election record).
	Free = "free"
	// Held: a holder renews the name, directly or through a session, and
	// the store's time since its last renewal is within the lease.
	Held = "held"
	// SessionEnded: the record points at a session that was released,
	// was taken by another incarnation or is gone: the holder let go, and
	// the name may be taken at once (with token + 1).
	SessionEnded = "session-ended"
	// ProbablyDead: the record (or its session) is held, but the store's
	// time since the last renewal is more than the lease. This is a flag
	// for people, never a decision: two clocks are compared (the store's
	// now and the store's time of the write, possibly stamped by another
	// host), and a contender still waits lease + 2e on its own clock.
	ProbablyDead = "probably-dead"
)

// States lists every state, in the order views count them.
var States = []string{Held, ProbablyDead, SessionEnded, Free}

// State is a name's state: the one definition that status, serve, the API
// and the summaries use. Times are store times, for people.
type State struct {
	// State is Free, Held, SessionEnded or ProbablyDead.
	State string `json:"state"`
	// Holder, Incarnation and Token are the record's (the last holder's
	// when SessionEnded; empty and the last token when Free).
	Holder      string `json:"holder,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	Token       uint64 `json:"token"`
	// Session is the session record the name is held through ("" when
	// held directly).
	Session string `json:"session,omitempty"`
	// Renewed is the store's time of the holder's last renewal: the
	// session record's last write when held through a session, the
	// record's own otherwise (zero when Free or SessionEnded).
	Renewed *time.Time `json:"renewed,omitempty"`
	// SinceRenewalSeconds is the store's time from Renewed to the read.
	SinceRenewalSeconds float64 `json:"since_renewal_seconds,omitempty"`
	// LeaseLeftSeconds is, when Held, the most lease the holder can have
	// left: the lease minus SinceRenewalSeconds (the holder sent its
	// renewal before the store wrote it).
	LeaseLeftSeconds *float64 `json:"lease_left_at_most_seconds,omitempty"`
	// LeaseSeconds is the lease the holder promised (its session's when
	// held through one).
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`

	// Damaged, when not empty, says why no contender will ever take the
	// name over: the lease it is held with lies outside the bounds any
	// valid configuration writes, or its token leaves no room for the
	// next (the election machine refuses both, and the campaign for the
	// name ends with one line). An operator fixes or deletes the record.
	Damaged string `json:"damaged,omitempty"`

	// Go callers: the same as durations, and the version of the record
	// whose changes are renewals (the session's or the name's).
	SinceRenewal   time.Duration `json:"-"`
	LeaseLeft      time.Duration `json:"-"`
	Lease          time.Duration `json:"-"`
	RenewalVersion int64         `json:"-"`
	RenewalRecord  string        `json:"-"`
}

// StateOf returns the state of rec. sess is the session record rec points
// at (nil when rec has no session or the session record does not exist);
// now is the store's current time (StoreNow).
func StateOf(rec store.Record, sess *store.Record, now time.Time) State {
	s := State{State: Free, Token: rec.Token}
	if rec.Free() {
		return s
	}
	s.Holder, s.Incarnation, s.Session = rec.Holder, rec.Incarnation, rec.Session
	live := rec
	if rec.Session != "" {
		if sess == nil || sess.Free() || sess.Holder != rec.Holder || sess.Incarnation != rec.Incarnation {
			s.State = SessionEnded
			return s
		}
		live = *sess
	}
	s.Lease, s.LeaseSeconds = live.Lease, bound.Seconds(live.Lease)
	switch {
	case live.Lease < election.MinLease || live.Lease > election.MaxLease:
		s.Damaged = fmt.Sprintf("lease %v outside [%v, %v]", live.Lease, election.MinLease, election.MaxLease)
	case rec.Token >= election.MaxToken:
		s.Damaged = fmt.Sprintf("token %d leaves no room for another (the largest is %d)", rec.Token, election.MaxToken)
	}
	s.RenewalVersion, s.RenewalRecord = live.Version, live.Name
	at := live.Updated.UTC()
	s.Renewed = &at
	s.SinceRenewal = max(now.Sub(live.Updated), 0)
	s.SinceRenewalSeconds = bound.Seconds(s.SinceRenewal.Round(time.Millisecond))
	if s.SinceRenewal > live.Lease {
		s.State = ProbablyDead
		return s
	}
	s.State = Held
	s.LeaseLeft = live.Lease - s.SinceRenewal
	left := bound.Seconds(s.LeaseLeft.Round(time.Millisecond))
	s.LeaseLeftSeconds = &left
	return s
}

// Describe says the state in one line for people, as status prints it.
// It reads only the fields that JSON carries.
func (s State) Describe() string {
	if s.Damaged != "" {
		return s.describe() + "; DAMAGED: " + s.Damaged + ", so no contender will take it over (fix or delete the record)"
	}
	return s.describe()
}

func (s State) describe() string {
	via := "directly"
	if s.Session != "" {
		via = "through session " + s.Session
	}
	since := secs(s.SinceRenewalSeconds)
	switch s.State {
	case Held:
		left := time.Duration(0)
		if s.LeaseLeftSeconds != nil {
			left = secs(*s.LeaseLeftSeconds)
		}
		return fmt.Sprintf("held by %s with token %d, %s; lease left at most %v (store time since the last renewal: %v)",
			s.Holder, s.Token, via, left, since)
	case ProbablyDead:
		return fmt.Sprintf("probably dead: held by %s with token %d, %s, but no renewal for %v by store time against a %v lease (a flag, not a decision: a contender takes over after lease + 2e on its own clock)",
			s.Holder, s.Token, via, since, secs(s.LeaseSeconds))
	case SessionEnded:
		return fmt.Sprintf("free to take: the session %s of its last holder %s ended (token %d; the next holder gets %d)",
			s.Session, s.Holder, s.Token, s.Token+1)
	}
	return "free"
}

// secs turns JSON seconds into a duration rounded to the millisecond.
func secs(f float64) time.Duration {
	return time.Duration(f * float64(time.Second)).Round(time.Millisecond)
}

// StoreNow returns the store's current time when the store can read one
// (store.TimeSource), else fallback (the local clock: the store's own for
// SQLite, and the writers' for etcd, which stamps writes on the client).
func StoreNow(ctx context.Context, st store.Store, fallback time.Time) (time.Time, error) {
	if ts, ok := store.TimeSourceOf(st); ok {
		return ts.StoreTime(ctx)
	}
	return fallback, nil
}

// Entry is one name with its record and state, as listings show it.
type Entry struct {
	Name string
	// Record is nil for a name without an election record (a job that
	// never ran).
	Record *store.Record
	State  State
}

// ReadStates reads the records of names and the session records they
// point at, in two batched reads (Store.GetMany),
// and returns each name's state at the store's time now. Its cost grows
// with len(names) and the number of distinct sessions among them.
func ReadStates(ctx context.Context, st store.Store, names []string, now time.Time) ([]Entry, error) {
	recs, err := getMany(ctx, st, names)
	if err != nil {
		return nil, err
	}
	var sessNames []string
	for _, r := range recs {
		if r != nil && r.Session != "" && !r.Free() {
			sessNames = append(sessNames, r.Session)
		}
	}
	slices.Sort(sessNames)
	sessNames = slices.Compact(sessNames)
	sessRecs, err := getMany(ctx, st, sessNames)
	if err != nil {
		return nil, err
	}
	sessions := make(map[string]*store.Record, len(sessNames))
	for i, n := range sessNames {
		sessions[n] = sessRecs[i]
	}
	out := make([]Entry, len(names))
	for i, n := range names {
		out[i] = Entry{Name: n, Record: recs[i], State: State{State: Free}}
		if r := recs[i]; r != nil {
			out[i].State = StateOf(*r, sessions[r.Session], now)
		}
	}
	return out, nil
}

// getMany reads records, nil for the missing ones.
func getMany(ctx context.Context, st store.Store, names []string) ([]*store.Record, error) {
	out := make([]*store.Record, len(names))
	if len(names) == 0 {
		return out, nil
	}
	res, err := st.GetMany(ctx, names)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		switch {
		case r.Err == nil:
			rec := r.Record
			out[i] = &rec
		case !errors.Is(r.Err, store.ErrNotFound):
			return nil, r.Err
		}
	}
	return out, nil
}
