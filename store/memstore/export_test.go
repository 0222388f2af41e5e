package memstore

import "github.com/batonhq/baton/store"

// PlantRun writes r into the ledger as given, unchecked, as a damaged
// store would hold it (SwapRun refuses a state no baton writes), for the
// conformance suite's damaged-row case.
func PlantRun(s *Store, r store.Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	r.Version = s.version
	s.putRun(r)
}
