package etcd

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
)

var _ store.Lister = (*Store)(nil)

// Names implements store.Lister: it reads the keys (not the values) of the
// election records and the job registrations. Session records
// (store.IsSession) are not names: they are left out.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	var names []string
	for _, dir := range []string{s.keys.prefix + "e/", s.keys.prefix + "j/"} {
		resp, err := s.get(ctx, "names", dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			n, err := url.PathUnescape(strings.TrimPrefix(string(kv.Key), dir))
			if err != nil {
				return nil, fmt.Errorf("etcd: key %q: %w: %v", kv.Key, store.ErrCorrupt, err)
			}
			if !store.IsSession(n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
