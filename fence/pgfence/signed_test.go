package pgfence_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/fence/pgfence"
)

// With a key, a forged token (1<<62, no valid signature) is refused before
// it reaches the table and does not move the fence; token 0 is refused
// with or without a key; the real leader's next write succeeds.
func TestCheckSigned(t *testing.T) {
	ctx, pool := setup(t)
	k, err := fence.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	try := func(token uint64, sig string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return pgfence.CheckSigned(ctx, tx, k, "billing", token, sig)
		})
	}
	if err := try(5, k.Sign("billing", 5)); err != nil {
		t.Fatal(err)
	}
	if err := try(1<<62, ""); !errors.Is(err, fence.ErrBadSignature) {
		t.Fatalf("unsigned forged token: %v", err)
	}
	if err := try(1<<62, k.Sign("billing", 5)); !errors.Is(err, fence.ErrBadSignature) {
		t.Fatalf("forged token with another token's signature: %v", err)
	}
	if err := try(5, k.Sign("billing", 5)); err != nil {
		t.Fatalf("the real leader after forged tokens: %v", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pgfence.Check(ctx, tx, "billing", 0) })
	if !errors.Is(err, fence.ErrInvalidToken) {
		t.Fatalf("token 0: %v", err)
	}
}
