package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/batonhq/baton/store"
)

// isPermanent is an error that says it is ErrCorrupt through its Is method.
type isPermanent struct{}

func (isPermanent) Error() string        { return "is corrupt" }
func (isPermanent) Is(target error) bool { return target == store.ErrCorrupt }

// uncomparable is an error type that == would panic on.
type uncomparable []string

func (uncomparable) Error() string { return "uncomparable" }

// Permanent is errors.Is of each of the four permanent errors, whatever
// the shape of err's tree.
func TestPermanentIsErrorsIs(t *testing.T) {
	perm := []error{store.ErrReplaced, store.ErrCorrupt, store.ErrSchema, store.ErrTokenLimit}
	errs := []error{
		nil,
		store.ErrConflict,
		store.ErrNotFound,
		store.ErrTokenLimit,
		fmt.Errorf("a: %w", store.ErrUnavailable),
		fmt.Errorf("a: %w", fmt.Errorf("b: %w", store.ErrSchema)),
		fmt.Errorf("%w: %w", store.ErrInvalid, store.ErrTokenLimit),
		fmt.Errorf("%w: %w", store.ErrUnavailable, errors.New("timeout")),
		errors.Join(store.ErrNotFound, fmt.Errorf("x: %w", store.ErrReplaced)),
		errors.Join(nil, store.ErrConflict),
		isPermanent{},
		fmt.Errorf("wrapped: %w", isPermanent{}),
		uncomparable{"a"},
		fmt.Errorf("wrapped: %w", uncomparable{"a"}),
	}
	for _, err := range errs {
		want := false
		for _, p := range perm {
			want = want || errors.Is(err, p)
		}
		if got := store.Permanent(err); got != want {
			t.Errorf("Permanent(%v) = %v, errors.Is says %v", err, got, want)
		}
	}
}
