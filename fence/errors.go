package fence

import "errors"

// ErrStaleToken is returned when work carries a fencing token lower than the
// highest token the resource has already accepted for the same name. Nothing
// of the rejected work is applied.
var ErrStaleToken = errors.New("stale fencing token: a newer leader has already written")
