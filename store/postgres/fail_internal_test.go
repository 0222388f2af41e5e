package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/testenv"
	"github.com/batonhq/baton/store"
)

// What waiting may cure is unavailable: a server that is down, starting
// up, shutting down or out of connections. One that answered with a
// refusal (credentials, no such database, no privilege) is not, and
// neither is a schema that is not baton's.
func TestFailClassifiesOpenErrors(t *testing.T) {
	testenv.ParallelUnlessLong(t)
	s := &Store{schema: "baton"}
	connect := func(code string) error {
		return fmt.Errorf("failed to connect to `user=baton database=ops`: %w", &pgconn.PgError{Severity: "FATAL", Code: code})
	}
	for _, tc := range []struct {
		what string
		err  error
		down bool
	}{
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), true},
		{"timeout", context.DeadlineExceeded, true},
		{"the database system is starting up", connect("57P03"), true},
		{"the database system is shutting down", connect("57P01"), true},
		{"too many connections", connect("53300"), true},
		{"connection failure", connect("08006"), true},
		{"wrong password", connect("28P01"), false},
		{"no pg_hba.conf entry", connect("28000"), false},
		{"no such database", connect("3D000"), false},
		{"no privilege", connect("42501"), false},
		{"no baton schema", connect("3F000"), false},
	} {
		err := s.fail(context.Background(), "open", tc.err)
		if got := errors.Is(err, store.ErrUnavailable); got != tc.down {
			t.Errorf("%s: %v; unavailable %v, want %v", tc.what, err, got, tc.down)
		}
	}
}
