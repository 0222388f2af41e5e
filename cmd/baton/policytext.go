package main

import (
	"strings"

	"github.com/batonhq/baton/schedule"
)

// specText is a stored job description as status, next and serve show
// it: schedule.Describe of what it parses to, so that every command shows
// one job's schedule and catch-up policy (cap, window, overlap, jitter)
// in the same words, including the parts an older baton left implicit
// ("catch-up all"). A description this baton cannot parse is shown as
// stored.
func specText(desc string) string {
	s, p, err := schedule.ParseSpec(desc)
	if err != nil {
		return desc
	}
	return schedule.Describe(s, p)
}

// policyText is the catch-up policy part of specText(desc), as status
// shows it after "catch-up:" ("all, max 100"), and ok false for a job
// without a schedule.
func policyText(desc string) (policy string, ok bool) {
	_, policy, ok = strings.Cut(specText(desc), "; catch-up ")
	return policy, ok
}
