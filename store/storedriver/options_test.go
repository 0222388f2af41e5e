package storedriver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

func TestOptionChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"InvalidOption", storedriver.InvalidOption("sqlite", "max-conns", 1, "at least 2"), "sqlite: " + store.ErrInvalid.Error() + ": invalid max-conns 1; want at least 2"},
		{"CheckPositive zero", storedriver.CheckPositive("etcd", "dial-timeout", 0, "5s"), "etcd: " + store.ErrInvalid.Error() + ": invalid dial-timeout 0s; want a positive duration, such as 5s"},
		{"CheckPositive negative", storedriver.CheckPositive("etcd", "dial-timeout", -time.Second, "5s"), "etcd: " + store.ErrInvalid.Error() + ": invalid dial-timeout -1s; want a positive duration, such as 5s"},
		{"CheckPositive positive", storedriver.CheckPositive("etcd", "dial-timeout", time.Nanosecond, "5s"), ""},
		{"CheckClock nil", storedriver.CheckClock("memstore", nil), "memstore: " + store.ErrInvalid.Error() + ": invalid clock nil; want a clock function such as time.Now"},
		{"CheckClock time.Now", storedriver.CheckClock("memstore", time.Now), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("got %v, want nil", tc.err)
				}
				return
			}
			if !errors.Is(tc.err, store.ErrInvalid) || tc.err.Error() != tc.want {
				t.Fatalf("got %v, want %q wrapping store.ErrInvalid", tc.err, tc.want)
			}
			var fe *bound.Error
			if !errors.As(tc.err, &fe) || fe.Option == "" {
				t.Fatalf("%v: errors.As finds no field error naming the option", tc.err)
			}
		})
	}
}
