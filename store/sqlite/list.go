package sqlite

import (
	"context"

	"github.com/batonhq/baton/store"
)

var _ store.Lister = (*Store)(nil)

// Names implements store.Lister. Session records (store.SessionPrefix) are
// not names: they are left out.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	const op = "names"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT name FROM baton_election WHERE substr(name, 1, ?1) <> ?2
		 UNION SELECT name FROM baton_jobs ORDER BY name`,
		len(store.SessionPrefix), store.SessionPrefix)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return names, nil
}
