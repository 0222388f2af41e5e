package kube

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
)

// The keys baton writes on its Leases.
const (
	// labelStore marks a Lease as a baton name's object; Names and the
	// change feed list by it.
	labelStore = "batonhq.github.io/store"
	// labelSelector selects the objects of labelStore.
	labelSelector = labelStore + "=" + schemaVersion
	// annotState holds the name's state (state, JSON).
	annotState = "batonhq.github.io/state"
	// annotToken shows the fencing token to people (kubectl describe).
	annotToken = "batonhq.github.io/token"
	// labelSession marks a name's Lease held through a session with a
	// digest of the session's name (sessionLabel), so that the session's
	// renewal finds the Leases it must renew too (renewNames).
	labelSession = "batonhq.github.io/session"
	// labelName marks a name's Lease with a digest of its object name
	// (nameLabel), so that GetMany lists the Leases of many names by one
	// set-based selector.
	labelName = "batonhq.github.io/name"
	// schemaVersion is the version of the state's layout.
	schemaVersion = "1"
)

// maxState is the most bytes of the state annotation: Kubernetes refuses
// an object whose annotations add up to more than 256 KiB, and the rest
// of the budget is left for the token and for others' annotations.
const maxState = 250 << 10

// logTail is how many election log events a name keeps: the log is a tail
// (see the package doc).
const logTail = 64

// state is everything baton keeps of one name, in one Lease: the election
// record, the tail of its log, the job, its ledger and its candidates,
// so that every write the store contract makes atomic is a write of one
// object, compared by resourceVersion.
type state struct {
	Name string `json:"name"`
	// Seq counts the object's writes by baton; every version the store
	// hands out (Record.Version, Run.Version) is one of its values.
	Seq int64 `json:"seq"`
	// Rec is the election record (nil: none), without Name and Via.
	Rec *store.Record `json:"rec,omitempty"`
	// Spec is the Lease spec as baton last wrote it: a Lease whose spec
	// differs was written by someone else since (foreign).
	Spec *specPrint `json:"spec,omitempty"`
	// Seen is another writer's spec as baton saw it at a write of its own
	// that kept it (a ledger row, a candidate row), and the record
	// version baton gave it then, so that baton's own writes do not move
	// the version of a record it did not write (a contender times the
	// other writer's lease by that version).
	Seen *seenSpec `json:"seen,omitempty"`
	// Log is the tail of the election log, oldest first.
	Log   []store.Event              `json:"log,omitempty"`
	Job   *store.Job                 `json:"job,omitempty"`
	Runs  map[string]store.Run       `json:"runs,omitempty"`
	Cands map[string]store.Candidate `json:"cands,omitempty"`
}

// specPrint is what baton compares of a Lease's spec to notice another
// writer (client-go's elector, kubectl).
type specPrint struct {
	Holder      string `json:"holder"`
	Duration    int32  `json:"duration"`
	Transitions int32  `json:"transitions"`
	Renew       string `json:"renew"`
}

// seenSpec is another writer's spec and the record version it was read
// at (state.Seen).
type seenSpec struct {
	Print   specPrint `json:"print"`
	Version int64     `json:"version"`
}

func printOf(spec coordinationv1.LeaseSpec) specPrint {
	p := specPrint{}
	if spec.HolderIdentity != nil {
		p.Holder = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		p.Duration = *spec.LeaseDurationSeconds
	}
	if spec.LeaseTransitions != nil {
		p.Transitions = *spec.LeaseTransitions
	}
	if spec.RenewTime != nil {
		p.Renew = spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return p
}

// objectName is the Lease name of an election or job name: the name
// itself where it is a valid object name (so that client-go and baton
// meet on one Lease), otherwise "baton--" and its base32 (or, too long
// for that, its SHA-256).
func objectName(name string) string {
	if !strings.HasPrefix(name, "baton--") && len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	enc := "baton--" + strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(name)))
	if len(enc) <= validation.DNS1123SubdomainMaxLength {
		return enc
	}
	sum := sha256.Sum256([]byte(name))
	return "baton--h" + hex.EncodeToString(sum[:])
}

// nameLabel is the value of labelName for a Lease's object name: 64
// bits of its SHA-256 (two names with one digest are told apart by the
// object's name).
func nameLabel(objName string) string {
	sum := sha256.Sum256([]byte(objName))
	return "n" + hex.EncodeToString(sum[:8])
}

// sessionLabel is the value of labelSession for a session record's name:
// a label value holds 63 characters at most, so it is a digest.
func sessionLabel(session string) string {
	sum := sha256.Sum256([]byte(session))
	return "s" + hex.EncodeToString(sum[:20])
}

// object is a name's Lease as read, and baton's state in it.
type object struct {
	lease *coordinationv1.Lease // nil: no object
	st    state
	// foreign: the spec was written by another writer since baton's last
	// write, and st.Rec is the record read from it; stored is the record
	// as baton's state holds it.
	foreign bool
	stored  *store.Record
	// recWritten: this write changes the record, so the spec is written
	// from it (with a new renewTime); other writes leave the spec as is.
	recWritten bool
	// sessionGone: the record is held through a session that was
	// released, so the spec is written with no holder (for client-go),
	// the record left as it is (for baton, a name of a released session
	// is free already). See releaseNames.
	sessionGone bool
}

// decode reads baton's state from l (nil: none). A Lease without the
// state annotation is someone else's (client-go's): its spec is its
// record. A state that does not parse is ErrCorrupt.
func decode(name string, l *coordinationv1.Lease) (object, error) {
	o := object{lease: l, st: state{Name: name}}
	if l == nil {
		return o, nil
	}
	if raw, ok := l.Annotations[annotState]; ok {
		if err := json.Unmarshal([]byte(raw), &o.st); err != nil {
			return o, fmt.Errorf("%w: kube: lease %s: annotation %s does not parse: %v", store.ErrCorrupt, l.Name, annotState, err)
		}
		if o.st.Name != name {
			return o, fmt.Errorf("%w: kube: lease %s holds the state of %q, not of %q", store.ErrCorrupt, l.Name, o.st.Name, name)
		}
		if v := l.Labels[labelStore]; v != schemaVersion {
			return o, fmt.Errorf("%w: kube: lease %s has schema %q; this baton knows %q", store.ErrSchema, l.Name, v, schemaVersion)
		}
	}
	p := printOf(l.Spec)
	if o.st.Spec != nil && *o.st.Spec == p {
		return o, nil
	}
	if o.st.Spec == nil && o.st.Rec == nil && p.Holder == "" && p.Renew == "" {
		return o, nil // baton's object of a job without record, untouched
	}
	// Written by another writer since baton's last write (or never by
	// baton): the spec is the record. Its version is the object's
	// resourceVersion, which is above every version baton drew from
	// this object (each of baton's writes was an etcd revision too).
	o.foreign, o.stored = true, o.st.Rec
	rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
	if err != nil || rv <= o.st.Seq {
		rv = o.st.Seq + 1
	}
	if o.st.Seen != nil && o.st.Seen.Print == p {
		rv = o.st.Seen.Version // the same spec as at baton's last write
	}
	rec := store.Record{Holder: p.Holder, Lease: time.Duration(p.Duration) * time.Second, Version: rv}
	if o.st.Rec != nil {
		rec.Token = o.st.Rec.Token
		if rec.Holder == o.st.Rec.Holder {
			rec.Incarnation, rec.Session = o.st.Rec.Incarnation, o.st.Rec.Session
		}
	}
	rec.Token = max(rec.Token, uint64(max(p.Transitions, 0)))
	if l.Spec.RenewTime != nil {
		rec.Updated = l.Spec.RenewTime.Time
	}
	o.st.Rec = &rec
	return o, nil
}

// record returns the name's election record, ok false if it has none.
func (o object) record() (store.Record, bool) {
	if o.st.Rec == nil {
		return store.Record{}, false
	}
	r := *o.st.Rec
	r.Name = o.st.Name
	return r, true
}

// token is the election token the ledger is fenced by (0: no record).
func (o object) token() uint64 {
	if o.st.Rec == nil {
		return 0
	}
	return o.st.Rec.Token
}

// next draws the version of a write: above every version the object
// showed, foreign ones included.
func (o *object) next() int64 {
	o.st.Seq = max(o.st.Seq, o.recVersion()) + 1
	return o.st.Seq
}

func (o object) recVersion() int64 {
	if o.st.Rec == nil {
		return 0
	}
	return o.st.Rec.Version
}

// appendEvent appends ev to the log tail, numbering it after the last.
func (o *object) appendEvent(mk func(seq uint64) store.Event) {
	var seq uint64 = 1
	if n := len(o.st.Log); n > 0 {
		seq = o.st.Log[n-1].Seq + 1
	}
	o.st.Log = append(o.st.Log, mk(seq))
	if len(o.st.Log) > logTail {
		o.st.Log = append([]store.Event(nil), o.st.Log[len(o.st.Log)-logTail:]...)
	}
}

// build builds the object to write from o's state at time now: the spec
// from the record, as client-go writes it, and the state in annotations.
// hold is the store's session hold (WithSessionHold).
func (o *object) build(objName string, now time.Time, hold time.Duration) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	if o.lease != nil {
		l = o.lease.DeepCopy()
	}
	l.Name = objName
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[labelStore] = schemaVersion
	l.Labels[labelName] = nameLabel(objName)
	o.st.Seen = nil
	if o.foreign && !o.recWritten {
		// The spec stays the other writer's, and so does its record's
		// version: baton's own write is not a renewal of it.
		o.st.Seen = &seenSpec{Print: printOf(l.Spec), Version: o.st.Rec.Version}
		o.st.Seq = max(o.st.Seq, o.st.Rec.Version)
		o.st.Rec = o.stored
	} else if r := o.st.Rec; r != nil && r.Session != "" {
		l.Labels[labelSession] = sessionLabel(r.Session)
	} else {
		delete(l.Labels, labelSession)
	}
	if o.st.Rec == nil && o.recWritten { // the record deleted, its log kept
		l.Spec, o.st.Spec = coordinationv1.LeaseSpec{}, nil
	}
	if r := o.st.Rec; r != nil && o.recWritten {
		prev := printOf(l.Spec)
		spec := coordinationv1.LeaseSpec{}
		held := r.Holder != "" && !o.sessionGone
		if held {
			h := r.Holder
			spec.HolderIdentity = &h
		}
		// client-go times a lease from when it saw the record change,
		// and its record's times are whole seconds: renewals within one
		// second look like one. A second more than the lease covers that
		// (see the package doc, "Mixed fleets").
		secs := int32(min(math.Ceil(bound.Add(r.Lease, time.Second).Seconds()), math.MaxInt32))
		if held && r.Session != "" {
			// Held through a session, whose renewals this Lease does not
			// see: it is written again before client-go could take it
			// (holdNames; see "Names held through a session").
			secs = holdSeconds(hold, r.Lease)
		}
		if secs > 0 {
			spec.LeaseDurationSeconds = &secs // the API refuses 0
		}
		trans := int32(min(r.Token, math.MaxInt32))
		spec.LeaseTransitions = &trans
		renew := metav1.NewMicroTime(now.Truncate(time.Microsecond)) // what the server keeps
		spec.RenewTime = &renew
		acquire := l.Spec.AcquireTime
		if prev.Holder != r.Holder || acquire == nil {
			acquire = &renew
		}
		if held {
			spec.AcquireTime = acquire
		}
		// client-go reads other fields it does not write; keep them.
		spec.Strategy, spec.PreferredHolder = l.Spec.Strategy, l.Spec.PreferredHolder
		l.Spec = spec
		p := printOf(spec)
		o.st.Spec = &p
	}
	raw, err := json.Marshal(o.st)
	if err != nil {
		return nil, fmt.Errorf("%w: kube: encoding the state of %q: %v", store.ErrInvalid, o.st.Name, err)
	}
	if len(raw) > maxState {
		return nil, fmt.Errorf("%w: kube: the state of %q would take %d bytes, above the %d a Lease's annotations hold: prune its ledger (baton prune) or keep fewer candidates", store.ErrInvalid, o.st.Name, len(raw), maxState)
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotState] = string(raw)
	l.Annotations[annotToken] = strconv.FormatUint(o.token(), 10)
	return l, nil
}

// read returns name's object.
func (s *Store) read(ctx context.Context, name string) (object, error) {
	objName := objectName(name)
	l, err := s.leases.Get(ctx, objName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return decode(name, nil)
	}
	if err != nil {
		return object{}, s.apiError(ctx, "get", objName, err)
	}
	return decode(name, l)
}

// errNoWrite, returned by an update's function, ends it without writing.
var errNoWrite = fmt.Errorf("kube: nothing to write")

// update applies fn to name's object and writes it by compare-and-swap of
// its resourceVersion, reading and applying again when another write came
// between (fn decides from the state it is given, so a retry decides
// again). fn returns errNoWrite to write nothing.
func (s *Store) update(ctx context.Context, name string, fn func(o *object) error) (object, error) {
	return s.updateFrom(ctx, name, nil, fn)
}

// updateFrom is update whose first attempt starts from first, a Lease of
// name just read (a list's), instead of reading it (nil: read it).
func (s *Store) updateFrom(ctx context.Context, name string, first *coordinationv1.Lease, fn func(o *object) error) (object, error) {
	if s.readOnly {
		return object{}, errReadOnly
	}
	objName := objectName(name)
	for {
		var o object
		var err error
		if first != nil {
			o, err = decode(name, first)
			first = nil
		} else {
			o, err = s.read(ctx, name)
		}
		if err != nil {
			return object{}, err
		}
		if err := fn(&o); err == errNoWrite {
			return o, nil
		} else if err != nil {
			return object{}, err
		}
		now := s.now()
		l, err := o.build(objName, now, s.sessionHold)
		if err != nil {
			return object{}, err
		}
		var out *coordinationv1.Lease
		if o.lease == nil {
			out, err = s.leases.Create(ctx, l, metav1.CreateOptions{})
		} else {
			out, err = s.leases.Update(ctx, l, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) {
				err = errGone
			}
		}
		if isRetry(err) {
			if ctx.Err() != nil {
				return object{}, s.apiError(ctx, "update", objName, ctx.Err())
			}
			continue
		}
		if err != nil {
			verb := "update"
			if o.lease == nil {
				verb = "create"
			}
			return object{}, s.apiError(ctx, verb, objName, err)
		}
		specWritten := o.recWritten
		o, err = decode(name, out)
		if err == nil && specWritten {
			s.holds.noteWrite(name, o, now) // the spec was written at now
		}
		return o, err
	}
}
