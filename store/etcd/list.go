package etcd

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
)

// Names implements store.Store: it reads the keys (not the values) of the
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

// NamesPage implements store.Store, in the order of the escaped keys:
// one ranged read of at most q.Limit keys (not values) from the election
// records and one from the job registrations, plus one more read when the
// range crosses the session records, which it skips.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	var keys []string
	for _, dir := range []string{s.keys.prefix + "e/", s.keys.prefix + "j/"} {
		ks, err := s.pageDir(ctx, dir, q)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) > q.Limit {
		keys = keys[:q.Limit]
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		n, err := url.PathUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("etcd: key %q: %w: %v", k, store.ErrCorrupt, err)
		}
		names[i] = n
	}
	return names, nil
}

// pageDir returns up to q.Limit escaped names of the page under dir.
func (s *Store) pageDir(ctx context.Context, dir string, q store.NameQuery) ([]string, error) {
	start := dir + url.PathEscape(q.Prefix)
	end := clientv3.GetPrefixRangeEnd(start)
	if q.After != "" {
		if a := dir + url.PathEscape(q.After) + "\x00"; a > start {
			start = a
		}
	}
	sessions := dir + url.PathEscape(store.SessionPrefix)
	var out []string
	for len(out) < q.Limit && start < end {
		resp, err := s.get(ctx, "names page", start, clientv3.WithRange(end), clientv3.WithLimit(int64(q.Limit-len(out))), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		skipped := false
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if strings.HasPrefix(k, sessions) && !store.IsSession(q.Prefix) {
				start, skipped = clientv3.GetPrefixRangeEnd(sessions), true // skip every session record
				break
			}
			out = append(out, strings.TrimPrefix(k, dir))
			start = k + "\x00"
		}
		if !skipped && !resp.More {
			break
		}
	}
	return out, nil
}

// CountHolders implements store.Store by reading every name, a page at a
// time (storedriver.CountHolders): etcd has no grouped query. Its cost
// grows with the number of names.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	return storedriver.CountHolders(ctx, s, now)
}
