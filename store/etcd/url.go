package etcd

import (
	"context"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The URL scheme: etcd://HOST:PORT[,HOST:PORT], a cluster reached over
// the network, whose unavailability is usually a lost quorum.
func init() {
	storedriver.Register(storedriver.Scheme{
		Names:     []string{"etcd"},
		Form:      "etcd://HOST:PORT[,HOST:PORT]",
		Rank:      30,
		Networked: true,
		Hint:      "no quorum?",
		Open: func(ctx context.Context, rawURL string, readOnly bool) (store.Store, error) {
			if readOnly {
				return storedriver.Opened(OpenURL(ctx, rawURL, WithReadOnly()))
			}
			return storedriver.Opened(OpenURL(ctx, rawURL))
		},
	})
}
