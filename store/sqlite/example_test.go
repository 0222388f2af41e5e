package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/store/sqlite"
)

// The processes of one machine share a store in one SQLite file; here each
// open of the file stands for a process. Leadership and its token live in
// the file: node-b, taking over after node-a resigns, gets a greater token,
// and so does node-a when it comes back.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "baton-sqlite-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "baton.db")

	lead := func(node string) {
		st, err := sqlite.Open(ctx, path)
		if err != nil {
			log.Fatal(err)
		}
		defer st.Close()
		e, err := baton.New(st, "billing", baton.WithNode(node))
		if err != nil {
			log.Fatal(err)
		}
		t, err := e.Campaign(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(node, "leads, token", t.Token())
		if err := t.Resign(ctx); err != nil {
			log.Fatal(err)
		}
	}
	lead("node-a")
	lead("node-b")
	lead("node-a")
	// Output:
	// node-a leads, token 1
	// node-b leads, token 2
	// node-a leads, token 3
}
