package sqlite

import (
	"context"

	"github.com/batonhq/baton/store"
)

var _ store.Lister = (*Store)(nil)

// Names implements store.Lister.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	const op = "names"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM baton_election UNION SELECT name FROM baton_jobs ORDER BY name`)
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
