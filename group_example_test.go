package baton_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store/memstore"
)

// A process that runs one controller per tenant holds all the tenants'
// names through one Group: one store write per renew interval, whatever the
// number of names, and a token per name for that name's fenced work.
func ExampleNewGroup() {
	ctx := context.Background()
	st := memstore.New() // in production: sqlite, postgres or etcd

	g, err := baton.NewGroup(st, baton.WithNode("node-a"))
	if err != nil {
		log.Fatal(err)
	}
	tenants := []string{"tenant-1", "tenant-2", "tenant-3"}
	var mu sync.Mutex
	var started []string
	var wg sync.WaitGroup
	wg.Add(len(tenants))
	err = g.Hold(ctx, tenants, func(t *baton.Term) {
		// Called on the group's goroutine: start the work and return.
		go func() {
			mu.Lock()
			started = append(started, fmt.Sprintf("%s token %d", t.Name(), t.Token()))
			mu.Unlock()
			wg.Done()
			<-t.Done() // stop when the term ends
		}()
	})
	if err != nil {
		log.Fatal(err)
	}
	wg.Wait()
	slices.Sort(started)
	fmt.Println(started)
	fmt.Println("held:", g.Stats().Held)

	// Close gives the session up: one write frees every name at once.
	if err := g.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held after close:", g.Stats().Held)
	// Output:
	// [tenant-1 token 1 tenant-2 token 1 tenant-3 token 1]
	// held: 3
	// held after close: 0
}
