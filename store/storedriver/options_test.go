package storedriver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

func TestOptionChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"InvalidOption", storedriver.InvalidOption("sqlite", "WithX", "bad"), "sqlite: WithX: " + store.ErrInvalid.Error() + ": bad"},
		{"CheckPositive zero", storedriver.CheckPositive("etcd", "WithDialTimeout", 0, "5s"), "etcd: WithDialTimeout: " + store.ErrInvalid.Error() + ": 0s is not positive; use a duration such as 5s"},
		{"CheckPositive negative", storedriver.CheckPositive("etcd", "WithDialTimeout", -time.Second, "5s"), "etcd: WithDialTimeout: " + store.ErrInvalid.Error() + ": -1s is not positive; use a duration such as 5s"},
		{"CheckPositive positive", storedriver.CheckPositive("etcd", "WithDialTimeout", time.Nanosecond, "5s"), ""},
		{"CheckClock nil", storedriver.CheckClock("memstore", nil), "memstore: WithTime: " + store.ErrInvalid.Error() + ": now is nil; pass a clock function such as time.Now"},
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
		})
	}
}
