package baton_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/memstore"
)

// Durations outside the bounds and unprintable names are refused with an
// error naming the option; nothing is clamped.
func TestOptionBounds(t *testing.T) {
	st := memstore.New()
	for _, tc := range []struct {
		option string
		opts   []baton.Option
	}{
		{"renew", []baton.Option{baton.WithRenew(time.Nanosecond)}},
		{"lease", []baton.Option{baton.WithLease(10 * time.Millisecond)}},
		{"clock-margin", []baton.Option{baton.WithClockMargin(10 * time.Second), baton.WithLease(time.Second)}},
		{"renew", []baton.Option{baton.WithLease(time.Second), baton.WithRenew(600 * time.Millisecond)}},
		{"poll", []baton.Option{baton.WithPoll(time.Microsecond)}},
		{"poll", []baton.Option{baton.WithLease(time.Second), baton.WithPoll(time.Second)}},
		{"retry", []baton.Option{baton.WithRetry(time.Nanosecond)}},
		{"node", []baton.Option{baton.WithNode("a\nb")}},
	} {
		_, err := baton.New(st, "x", tc.opts...)
		var oe *baton.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option {
			t.Errorf("options %s: %v, want an OptionError naming %s", tc.option, err, tc.option)
		}
		if cerr := baton.CheckOptions(tc.opts...); cerr == nil || cerr.Error() != err.Error() {
			t.Errorf("CheckOptions disagrees with New: %v vs %v", cerr, err)
		}
	}
	if err := baton.CheckOptions(baton.WithLease(baton.MinLease), baton.WithClockMargin(5*time.Millisecond)); err != nil {
		t.Errorf("the minimum lease: %v", err)
	}
	for _, name := range []string{"a\nb", "tab\there", "\x1b[2J", string([]byte{0xff})} {
		if _, err := baton.New(st, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("name %q: %v, want ErrInvalid", name, err)
		}
	}
}
