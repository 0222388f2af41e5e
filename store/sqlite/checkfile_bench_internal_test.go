package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkCheckFile is the check every call and every renewal runs on the
// store's file (checkFile): that the path still names the file Open
// opened, and that the file still holds this store.
func BenchmarkCheckFile(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "baton.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if err := s.checkFile("bench"); err != nil {
			b.Fatal(err)
		}
	}
}
