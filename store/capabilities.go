package store

import "strings"

// Capabilities is the set of optional behaviours a store declares it
// offers (Store.Capabilities). Each one has an interface of its own
// (Identifier, TimeSource, OrderedFeed, Succeeder), which the library
// reaches only through the accessor of this package that consults the
// declaration (IdentifierOf, TimeSourceOf, OrderedFeedOf, SucceederOf):
// a method a store implements but does not declare is never called, and
// a capability declared by a store that does not implement its interface
// is not used either. storetest.Run fails on both (the declaration must be
// true), and NewGroup logs one line naming a capability it would use and
// cannot.
type Capabilities uint8

// The capabilities a store may declare.
const (
	// CapIdentity: the store implements Identifier (an id of the store
	// it opened, and ErrReplaced when the store it reaches is another).
	CapIdentity Capabilities = 1 << iota
	// CapStoreTime: the store implements TimeSource (a clock of its own,
	// on the server).
	CapStoreTime
	// CapOrderedFeed: the store implements OrderedFeed (its change feed
	// says how far it has reported, Change.Through).
	CapOrderedFeed
	// CapSuccession: the store implements Succeeder (it keeps
	// successions: a dead session passes its names on in one write).
	CapSuccession

	// AllCapabilities is every capability above.
	AllCapabilities = CapIdentity | CapStoreTime | CapOrderedFeed | CapSuccession
)

// capNames are the capabilities' names, in bit order.
var capNames = [...]string{"identity", "store-time", "ordered-feed", "successions"}

// Has reports whether c holds every capability of x.
func (c Capabilities) Has(x Capabilities) bool { return c&x == x }

// String returns the capabilities' names joined by "|" ("identity|successions"),
// or "none".
func (c Capabilities) String() string {
	var names []string
	for i, n := range capNames {
		if c&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if rest := c &^ AllCapabilities; rest != 0 {
		names = append(names, "unknown")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// capability returns st as a T if st declares c and implements T.
func capability[T any](st Store, c Capabilities) (T, bool) {
	var zero T
	if st == nil || !st.Capabilities().Has(c) {
		return zero, false
	}
	v, ok := st.(T)
	if !ok {
		return zero, false
	}
	return v, true
}

// IdentifierOf returns st's Identifier if st declares CapIdentity and
// implements it.
func IdentifierOf(st Store) (Identifier, bool) { return capability[Identifier](st, CapIdentity) }

// TimeSourceOf returns st's TimeSource if st declares CapStoreTime and
// implements it.
func TimeSourceOf(st Store) (TimeSource, bool) { return capability[TimeSource](st, CapStoreTime) }

// OrderedFeedOf reports whether st's change feed is ordered: st declares
// CapOrderedFeed and implements OrderedFeed, which reports true.
func OrderedFeedOf(st Store) bool {
	o, ok := capability[OrderedFeed](st, CapOrderedFeed)
	return ok && o.FeedInOrder()
}

// SucceederOf returns st's Succeeder if st declares CapSuccession and
// implements it.
func SucceederOf(st Store) (Succeeder, bool) { return capability[Succeeder](st, CapSuccession) }

// Usable returns the capabilities st declares and implements: those the
// accessors above hand out.
func Usable(st Store) Capabilities {
	var c Capabilities
	if _, ok := IdentifierOf(st); ok {
		c |= CapIdentity
	}
	if _, ok := TimeSourceOf(st); ok {
		c |= CapStoreTime
	}
	if OrderedFeedOf(st) {
		c |= CapOrderedFeed
	}
	if _, ok := SucceederOf(st); ok {
		c |= CapSuccession
	}
	return c
}
