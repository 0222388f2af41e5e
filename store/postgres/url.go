package postgres

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The URL scheme: postgres://USER@HOST/DB (also postgresql://), a server
// reached over the network.
func init() {
	storedriver.Register(storedriver.Scheme{
		Names:     []string{"postgres", "postgresql"},
		Form:      "postgres://USER@HOST/DB",
		Rank:      20,
		Networked: true,
		Open: func(ctx context.Context, rawURL string, readOnly bool) (store.Store, error) {
			if readOnly {
				return storedriver.Opened(Open(ctx, rawURL, WithReadOnly()))
			}
			return storedriver.Opened(Open(ctx, rawURL))
		},
	})
}
