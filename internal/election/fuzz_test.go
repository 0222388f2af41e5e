package election_test

import (
	"testing"

	"pgregory.net/rapid"
)

// The fuzz targets run the property tests' bodies from fuzz input, so
// that `go test -fuzz` searches the same spaces with coverage guidance
// (.ci/run fuzzes each for a bounded time; testdata/fuzz holds the seed
// corpus). Without -fuzz they run the corpus as ordinary tests.

// FuzzProtocol: random interleavings of several machines on one store
// (late and reordered replies, crashes, cuts, pauses, resignations,
// clocks within the margin); after every step at most one node holds a
// valid term, the log's tokens rise and agree with the record.
func FuzzProtocol(f *testing.F) { f.Fuzz(rapid.MakeFuzz(protocolProperty)) }

// FuzzNoEarlyTakeover: a contender anywhere in the valid configuration
// range against a record with any lease and any token never takes it over
// before lease + 2e, and reports a record it cannot trust.
func FuzzNoEarlyTakeover(f *testing.F) { f.Fuzz(rapid.MakeFuzz(noEarlyTakeover)) }

// FuzzGroup: the Group property (sessions, many names) from fuzz input.
func FuzzGroup(f *testing.F) { f.Fuzz(rapid.MakeFuzz(groupProperty)) }
