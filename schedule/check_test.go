package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/schedule"
)

// CheckOptions refuses what New refuses, naming the field, without a
// store; and accepts what New accepts.
func TestCheckOptions(t *testing.T) {
	every, err := schedule.Every(time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	job := schedule.Job{Name: "j", Schedule: every, Policy: schedule.Policy{CatchUp: schedule.CatchUpAll}}
	if err := schedule.CheckOptions(job, schedule.WithRetention(schedule.DefaultRetention),
		schedule.WithClockGuard(schedule.StepReference(), schedule.DefaultClockTolerance)); err != nil {
		t.Fatalf("valid job and options: %v", err)
	}
	for _, tc := range []struct {
		field string
		job   func(*schedule.Job)
		opts  []schedule.Option
	}{
		{"job", func(j *schedule.Job) { j.Name = "a\nb" }, nil},
		{"catch-up-max", func(j *schedule.Job) { j.Policy.Max = -1 }, nil},
		{"jitter", func(j *schedule.Job) { j.Policy.Jitter = 25 * time.Hour }, nil},
		{"retries", func(j *schedule.Job) { j.Policy.Retries = -1 }, nil},
		{"keep-rows", nil, []schedule.Option{schedule.WithRetention(schedule.Retention{Rows: -1})}},
		{"clock-tolerance", nil, []schedule.Option{schedule.WithClockGuard(schedule.StepReference(), -time.Second)}},
		{"poll", nil, []schedule.Option{schedule.WithPoll(0)}},
		{"takeover-grace", nil, []schedule.Option{schedule.WithTakeoverGrace(-time.Second)}},
	} {
		j := job
		if tc.job != nil {
			tc.job(&j)
		}
		var be *bound.Error
		if err := schedule.CheckOptions(j, tc.opts...); !errors.As(err, &be) || be.Option != tc.field {
			t.Errorf("%s: %v, want a bound.Error naming %s", tc.field, err, tc.field)
		}
	}
}
