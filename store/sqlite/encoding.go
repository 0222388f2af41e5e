package sqlite

import (
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/batonhq/baton/store"
)

// Time conversion: times are stored as integer Unix nanoseconds, UTC; the
// zero time.Time is stored as NULL.

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func checkTime(field string, t time.Time) error {
	if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
		return fmt.Errorf("%w: %s %v is outside the years 1678-2262 the sqlite store can hold", store.ErrInvalid, field, t)
	}
	return nil
}

func nsOf(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func timeOf(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64).UTC()
}

// nsScanner scans a nullable integer of Unix nanoseconds into a time.Time.
type nsScanner struct{ t *time.Time }

func (n nsScanner) Scan(v any) error {
	var ns sql.NullInt64
	if err := ns.Scan(v); err != nil {
		return err
	}
	*n.t = timeOf(ns)
	return nil
}

// nullText scans a nullable text into a string, NULL as "".
type nullText struct{ s *string }

func (n nullText) Scan(v any) error {
	var ns sql.NullString
	if err := ns.Scan(v); err != nil {
		return err
	}
	*n.s = ns.String
	return nil
}
