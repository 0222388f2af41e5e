package scheduler

import (
	"errors"
	"reflect"
	"testing"
)

// Failed answers each store call with its own answer type carrying the
// error, and nothing else.
func TestFailedAnswersEachCall(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		a    Action
		want Event
	}{
		{Register{}, Registered{Err: boom}},
		{ReadRuns{}, RunsRead{Err: boom}},
		{ReadJob{}, JobRead{Err: boom}},
		{SwapRun{}, Swapped{Err: boom}},
		{GetRun{}, ReadBack{Err: boom}},
		{Prune{}, Pruned{Err: boom}},
		{CheckClock{}, nil},
		{StartEffect{}, nil},
		{Halt{}, nil},
	} {
		if got := Failed(c.a, boom); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Failed(%T) = %#v, want %#v", c.a, got, c.want)
		}
	}
}
