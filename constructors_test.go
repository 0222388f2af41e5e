package baton_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonprom"
	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/fenceproxy"
	"github.com/batonhq/baton/schedule"
	"github.com/batonhq/baton/store/memstore"
)

// TestConstructorsReturnOptionError: every public constructor that
// validates its input returns, for bad input, an error that errors.As
// matches with *baton.OptionError, the module's one field-error type,
// naming the option or argument to fix. (The stores' Open functions are
// not in the table yet: see docs/ARCHITECTURE.md's rules.)
func TestConstructorsReturnOptionError(t *testing.T) {
	st := memstore.New()
	job := schedule.Job{Name: "billing"}
	exec := func(context.Context, schedule.Period, uint64) (int, string, error) { return 0, "", nil }
	upstream, err := url.Parse("http://localhost:8080")
	if err != nil {
		t.Fatal(err)
	}
	db := new(sql.DB) // never used: New refuses its options first
	for _, tc := range []struct {
		call   string
		option string
		err    func() error
	}{
		{"baton.New(nil store)", "store", func() error { _, err := baton.New(nil, "billing"); return err }},
		{"baton.New(empty name)", "name", func() error { _, err := baton.New(st, ""); return err }},
		{"baton.New(WithLease 1ms)", "lease", func() error {
			_, err := baton.New(st, "billing", baton.WithLease(time.Millisecond))
			return err
		}},
		{"baton.New(WithBalance)", "balance", func() error { _, err := baton.New(st, "billing", baton.WithBalance()); return err }},
		{"baton.New(WithShare)", "share", func() error { _, err := baton.New(st, "billing", baton.WithShare(2)); return err }},
		{"baton.NewGroup(WithShare 0)", "share", func() error { _, err := baton.NewGroup(st, baton.WithBalance(), baton.WithShare(0)); return err }},
		{"baton.NewGroup(WithShare over MaxWeight)", "share", func() error {
			_, err := baton.NewGroup(st, baton.WithBalance(), baton.WithShare(baton.MaxWeight+1))
			return err
		}},
		{"baton.NewGroup(WithShare without WithBalance)", "share", func() error { _, err := baton.NewGroup(st, baton.WithShare(2)); return err }},
		{"baton.NewGroup(nil store)", "store", func() error { _, err := baton.NewGroup(nil); return err }},
		{"baton.NewGroup(WithPoll 0)", "poll", func() error { _, err := baton.NewGroup(st, baton.WithPoll(0)); return err }},
		{"baton.CheckOptions(WithClock nil)", "clock", func() error { return baton.CheckOptions(baton.WithClock(nil)) }},
		{"schedule.New(nil store)", "store", func() error { _, err := schedule.New(nil, job, exec); return err }},
		{"schedule.New(nil executor)", "executor", func() error { _, err := schedule.New(st, job, nil); return err }},
		{"schedule.New(WithPoll 0)", "poll", func() error { _, err := schedule.New(st, job, exec, schedule.WithPoll(0)); return err }},
		{"schedule.New(WithClock nil)", "clock", func() error { _, err := schedule.New(st, job, exec, schedule.WithClock(nil)); return err }},
		{"schedule.CheckOptions(WithCallTimeout 0)", "call-timeout", func() error {
			return schedule.CheckOptions(job, schedule.WithCallTimeout(0))
		}},
		{"schedule.CheckOptions(WithObserver nil)", "observer", func() error {
			return schedule.CheckOptions(job, schedule.WithObserver(nil))
		}},
		{"schedule.CheckOptions(bad policy)", "retries", func() error {
			return schedule.CheckOptions(schedule.Job{Name: "billing", Policy: schedule.Policy{Retries: -1}})
		}},
		{"fence.NewKey(short secret)", "key", func() error { _, err := fence.NewKey([]byte("short")); return err }},
		{"fence.NewSignedGuard(nil)", "key", func() error { _, err := fence.NewSignedGuard(nil); return err }},
		{"fenceproxy.New(nil upstream)", "upstream", func() error { _, err := fenceproxy.New(nil, db, fence.SQLite); return err }},
		{"fenceproxy.New(nil db)", "db", func() error { _, err := fenceproxy.New(upstream, nil, fence.SQLite); return err }},
		{"fenceproxy.New(zero Dialect)", "dialect", func() error { _, err := fenceproxy.New(upstream, db, fence.Dialect{}); return err }},
		{"fenceproxy.New(WithName empty)", "name", func() error {
			_, err := fenceproxy.New(upstream, db, fence.SQLite, fenceproxy.WithName(""))
			return err
		}},
		{"batonprom.New(nil registry)", "registry", func() error { _, err := batonprom.New(nil); return err }},
	} {
		err := tc.err()
		var oe *baton.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%s: %v (%T), want an error wrapping a *baton.OptionError naming %s", tc.call, err, err, tc.option)
			continue
		}
		if oe.Option != tc.option {
			t.Errorf("%s: %v names %q, want %q", tc.call, err, oe.Option, tc.option)
		}
	}
}
