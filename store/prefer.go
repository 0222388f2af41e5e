package store

import "time"

// PreferChanged is the election log event of Store.PreferJob: an operator
// changed the preference policy of the job of this name (baton prefer,
// docs/prefer.md). Its Detail says from what to what ("FROM -> TO"). The
// record's holder, token and version are unchanged: the leader keeps its
// term and hands the new policy to its election when it next reads the
// job.
const PreferChanged EventKind = "prefer-changed"

// JobPrefer asks Store.PreferJob to set the preference policy of the job
// Name: Prefer is the policy's text as the election machine parses it
// (none, highest-weight, oldest-version, newest-version, label:K=V; ""
// is none), Hysteresis how long a leader leads before it may hand over
// (0: the runtime's default). A store keeps both as given, checking only
// that Prefer is printable text of at most MaxReasonLen bytes and
// Hysteresis not negative; its readers parse them.
type JobPrefer struct {
	Name       string
	Prefer     string
	Hysteresis time.Duration
}

// PreferText is a job's preference as events and views show it: the
// policy ("none" when empty) and, when set, its hysteresis.
func PreferText(prefer string, hysteresis time.Duration) string {
	if prefer == "" {
		prefer = "none"
	}
	if hysteresis > 0 {
		prefer += " (hysteresis " + hysteresis.String() + ")"
	}
	return prefer
}
