package postgres

import (
	"context"

	"github.com/batonhq/baton/store"
)

var _ store.Lister = (*Store)(nil)

// Names implements store.Lister. Session records are not names: they are
// left out.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	const op = "names"
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name FROM `+s.q+`.election WHERE NOT starts_with(name, $1)
		UNION SELECT name FROM `+s.q+`.jobs ORDER BY name`, store.SessionPrefix)
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
