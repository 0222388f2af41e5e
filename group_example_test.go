package baton_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

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

// Two processes that hold the same partitions with WithBalance share them:
// the second asks the first to hand half of them over, and each ends with
// three of the six.
func ExampleWithBalance() {
	ctx := context.Background()
	st := memstore.New() // in production: sqlite, postgres or etcd
	partitions := []string{"p-1", "p-2", "p-3", "p-4", "p-5", "p-6"}

	join := func(node string) *baton.Group {
		g, err := baton.NewGroup(st, baton.WithNode(node), baton.WithBalance(),
			baton.WithLease(500*time.Millisecond), baton.WithRenew(100*time.Millisecond), baton.WithClockMargin(50*time.Millisecond))
		if err != nil {
			log.Fatal(err)
		}
		// The same names on every node; onTerm starts a partition's work.
		if err := g.Hold(ctx, partitions, nil); err != nil {
			log.Fatal(err)
		}
		return g
	}
	a := join("node-a")
	for a.Stats().Held < len(partitions) {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("node-a alone holds", a.Stats().Held)

	b := join("node-b") // a second process starts
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if a.Stats().Held == 3 && b.Stats().Held == 3 {
			break
		}
	}
	fmt.Println("node-a holds", a.Stats().Held, "and node-b", b.Stats().Held)
	b.Close(ctx)
	a.Close(ctx)
	// Output:
	// node-a alone holds 6
	// node-a holds 3 and node-b 3
}

// Two balanced processes of weights 1 and 2 (WithShare) share six
// partitions by their weights: two and four.
func ExampleWithShare() {
	ctx := context.Background()
	st := memstore.New() // in production: sqlite, postgres or etcd
	partitions := []string{"p-1", "p-2", "p-3", "p-4", "p-5", "p-6"}

	join := func(node string, weight int) *baton.Group {
		g, err := baton.NewGroup(st, baton.WithNode(node), baton.WithBalance(), baton.WithShare(weight),
			baton.WithLease(500*time.Millisecond), baton.WithRenew(100*time.Millisecond), baton.WithClockMargin(50*time.Millisecond))
		if err != nil {
			log.Fatal(err)
		}
		if err := g.Hold(ctx, partitions, nil); err != nil {
			log.Fatal(err)
		}
		return g
	}
	small := join("small", 1)
	for small.Stats().Held < len(partitions) {
		time.Sleep(10 * time.Millisecond)
	}
	big := join("big", 2) // the bigger machine starts
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if small.Stats().Held == 2 && big.Stats().Held == 4 {
			break
		}
	}
	fmt.Println("small holds", small.Stats().Held, "and big", big.Stats().Held)
	big.Close(ctx)
	small.Close(ctx)
	// Output:
	// small holds 2 and big 4
}
