package sqlite

import (
	"context"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// The URL scheme: sqlite:PATH (also sqlite3: and file:), a file on this
// host.
func init() {
	storedriver.Register(storedriver.Scheme{
		Names: []string{"sqlite", "sqlite3", "file"},
		Form:  "sqlite:PATH",
		Rank:  10,
		Path:  true,
		Open: func(ctx context.Context, rawURL string, readOnly bool) (store.Store, error) {
			_, rest, _ := strings.Cut(rawURL, ":")
			if strings.HasPrefix(rest, "//") {
				return nil, storedriver.BadURL("write sqlite:PATH (e.g. sqlite:/var/lib/baton.db), not sqlite://")
			}
			if rest == "" {
				return nil, storedriver.BadURL("no file path after sqlite:")
			}
			if readOnly {
				return storedriver.Opened(Open(ctx, rest, WithReadOnly()))
			}
			return storedriver.Opened(Open(ctx, rest))
		},
	})
}
