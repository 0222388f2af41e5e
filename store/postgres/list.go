package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
)

// Names implements store.Store. Session records are not names: they are
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
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return names, nil
}

// NamesPage implements store.Store: one query, each side a range of
// its primary key (names collate as bytes, "C") bounded by the limit.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	const op = "names page"
	if err := q.Check(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	// With a prefix the range ends before the prefix followed by U+10FFFF
	// (no name continues past it; PostgreSQL text holds no 0xff byte).
	exclude := store.SessionPrefix
	if store.IsSession(q.Prefix) {
		exclude = "\x01" // session records asked for: no name begins with it
	}
	bound, args := "", []any{q.After, q.Prefix, q.Limit, exclude}
	if q.Prefix != "" {
		bound, args = " AND name < $5", append(args, q.Prefix+"\U0010FFFF")
	}
	rows, err := s.pool.Query(ctx, `(SELECT name FROM `+s.q+`.election WHERE name > $1 AND name >= $2`+bound+`
			AND NOT starts_with(name, $4) ORDER BY name LIMIT $3)
		UNION
		(SELECT name FROM `+s.q+`.jobs WHERE name > $1 AND name >= $2`+bound+` ORDER BY name LIMIT $3)
		ORDER BY name LIMIT $3`, args...)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return names, nil
}

// CountHolders implements store.Store with one grouped query.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	const op = "count holders"
	if err := s.enter(ctx, op); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx, `SELECT holder, incarnation, session, count(*),
			count(*) FILTER (WHERE updated + make_interval(secs => lease_ns / 1e9) < $2),
			(SELECT count(*) FROM `+s.q+`.jobs j WHERE NOT EXISTS (SELECT 1 FROM `+s.q+`.election e WHERE e.name = j.name))
		FROM `+s.q+`.election WHERE NOT starts_with(name, $1)
		GROUP BY holder, incarnation, session ORDER BY holder, incarnation, session`, store.SessionPrefix, now)
	if err != nil {
		return nil, 0, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []store.HolderCount
	jobs := -1
	for rows.Next() {
		var c store.HolderCount
		if err := rows.Scan(&c.Holder, &c.Incarnation, &c.Session, &c.Names, &c.Silent, &jobs); err != nil {
			return nil, 0, s.fail(ctx, op, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail(ctx, op, err)
	}
	if jobs < 0 { // no election record at all: every job is without one
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q+`.jobs`).Scan(&jobs); err != nil {
			return nil, 0, s.fail(ctx, op, err)
		}
	}
	return out, jobs, nil
}
