package main

import (
	"bytes"
	"errors"
	"testing"
)

// A command's error line names baton and the command once: the prefix of
// package baton, and of the package the command is named after, is not
// said again; any other package's prefix stays.
func TestFailPrefix(t *testing.T) {
	for _, tc := range []struct {
		cmd, err, line string
	}{
		{"resign", "baton: nobody holds the election", "baton resign: nobody holds the election\n"},
		{"sim", "sim: nodes must be from 1 to 50, got 0", "baton sim: nodes must be from 1 to 50, got 0\n"},
		{"drill node", "drill: --column \"x\": want plain, fencing or fencing+trigger", "baton drill node: --column \"x\": want plain, fencing or fencing+trigger\n"},
		{"next", "schedule: job schedule \"x\": bad", "baton next: schedule: job schedule \"x\": bad\n"},
		{"run", "sim: not this command's package", "baton run: sim: not this command's package\n"},
	} {
		var errb bytes.Buffer
		e := &env{stdout: &bytes.Buffer{}, stderr: &errb}
		if code := e.fail(tc.cmd, errors.New(tc.err)); code != exitFailure || errb.String() != tc.line {
			t.Errorf("fail(%q, %q): exit %d, %q; want exit 1, %q", tc.cmd, tc.err, code, errb.String(), tc.line)
		}
	}
}
