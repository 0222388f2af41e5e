package batonprom_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonprom"
	"github.com/batonhq/baton/store/memstore"
)

// Metrics go to a registry the caller owns; serve it with promhttp.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := batonprom.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	e, err := baton.New(memstore.New(), "billing", baton.WithNode("node-a"), baton.WithObserver(m))
	if err != nil {
		log.Fatal(err)
	}
	term, err := e.Campaign(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close(context.Background())

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "baton_leader", "baton_token":
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	fmt.Println("ready:", m.Ready("billing", time.Now()) == nil, "token", term.Token())
	// Output:
	// baton_leader 1
	// baton_token 1
	// ready: true token 1
}
