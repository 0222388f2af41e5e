package fence

import (
	"fmt"
	"strconv"
)

// validate reports whether name and token can be checked at all.
func validate(name string, token uint64) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrNoFence)
	}
	if token == 0 {
		return fmt.Errorf("%w: token 0 for %q (election tokens start at 1)", ErrInvalidToken, name)
	}
	return nil
}

// parseToken parses the decimal form of a token, as written by Env and
// SetHeaders. what names the source in the error.
func parseToken(what, s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: %s is missing or empty", ErrNoFence, what)
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q is not a decimal uint64", ErrInvalidToken, what, s)
	}
	if t == 0 {
		return 0, fmt.Errorf("%w: %s is 0 (election tokens start at 1)", ErrInvalidToken, what)
	}
	return t, nil
}
