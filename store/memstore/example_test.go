package memstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store/memstore"
)

// A memstore is the store of one process: two electors on it stand for two
// nodes in tests and simulations. The first to campaign leads with token
// 1; when it resigns the other takes over at once, with a greater token.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	a, err := baton.New(st, "billing", baton.WithNode("node-a"))
	if err != nil {
		log.Fatal(err)
	}
	b, err := baton.New(st, "billing", baton.WithNode("node-b"))
	if err != nil {
		log.Fatal(err)
	}
	ta, err := a.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node-a leads, token", ta.Token())
	if err := ta.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	tb, err := b.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node-b leads, token", tb.Token(), "node-a valid", ta.Valid())
	if err := tb.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// node-a leads, token 1
	// node-b leads, token 2 node-a valid false
}
