package memstore

import (
	"context"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The URL scheme: mem:, an empty in-process store, gone when the process
// ends (tests), read-only or not.
func init() {
	storedriver.Register(storedriver.Scheme{
		Names:     []string{"mem"},
		Form:      "mem:",
		Note:      "for a throwaway in-process store",
		Rank:      40,
		InProcess: true,
		Open: func(ctx context.Context, rawURL string, _ bool) (store.Store, error) {
			if _, rest, _ := strings.Cut(rawURL, ":"); rest != "" {
				return nil, storedriver.BadURL("mem: takes nothing after the colon")
			}
			return storedriver.Opened(Open(ctx))
		},
	})
}
