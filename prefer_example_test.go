package baton_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store/memstore"
)

// A node says who it is (WithCandidate) and the name's policy prefers the
// heaviest live candidate (WithPreference): the lead moves to it, but only
// at a safe point of the work, between two units, and only once the
// leader has led for the hysteresis.
func ExampleWithPreference() {
	ctx := context.Background()
	st := memstore.New()
	opts := func(node string, weight int) []baton.Option {
		return []baton.Option{baton.WithNode(node), baton.WithLease(time.Second),
			baton.WithCandidate(baton.Candidacy{Weight: weight, Labels: map[string]string{"zone": "eu-1"}}),
			baton.WithPreference("highest-weight", time.Second)}
	}
	small, err := baton.New(st, "billing", opts("small", 1)...)
	if err != nil {
		log.Fatal(err)
	}
	term, err := small.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	big, err := baton.New(st, "billing", opts("big", 10)...)
	if err != nil {
		log.Fatal(err)
	}
	won := make(chan *baton.Term, 1)
	go func() {
		t, err := big.Campaign(ctx)
		if err != nil {
			log.Fatal(err)
		}
		won <- t
	}()
	// The work: units, at a safe point only between two.
	for term.SafePoint(false) == nil {
		time.Sleep(100 * time.Millisecond) // a unit of work
		if term.SafePoint(true) != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // between units: here it may be handed over
	}
	next := <-won
	fmt.Println("small's term:", errors.Is(term.Err(), baton.ErrHandedOver))
	fmt.Println("leader now:", next.Node(), "token", next.Token())
	next.Resign(ctx)
	// Output:
	// small's term: true
	// leader now: big token 2
}
