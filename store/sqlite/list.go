package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/batonhq/baton/store"
)

// Names implements store.Store. Session records (store.SessionPrefix) are
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
	names, err := scanNames(rows)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return names, nil
}

// NamesPage implements store.Store: one query, each side bounded by
// the limit and read in the order of its primary key.
func (s *Store) NamesPage(ctx context.Context, q store.NameQuery) ([]string, error) {
	const op = "names page"
	if err := q.Check(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx, op); err != nil {
		return nil, err
	}
	// Names sort as bytes (SQLite's BINARY collation): the range on the
	// primary key starts at the cursor or the prefix and, with a prefix,
	// ends before the prefix followed by 0xff (no UTF-8 name has that
	// byte), so the scan reads only the names of the page.
	bound, args := "", []any{q.After, q.Prefix, q.Limit, len(store.SessionPrefix), store.SessionPrefix}
	if q.Prefix != "" {
		bound, args = " AND name < ?6", append(args, q.Prefix+"\xff")
	}
	if store.IsSession(q.Prefix) {
		args[4] = "" // session records asked for: exclude none
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT name FROM (SELECT name FROM baton_election WHERE name > ?1 AND name >= ?2`+bound+`
			AND substr(name, 1, ?4) <> ?5 ORDER BY name LIMIT ?3)
		 UNION
		 SELECT name FROM (SELECT name FROM baton_jobs WHERE name > ?1 AND name >= ?2`+bound+`
			ORDER BY name LIMIT ?3)
		 ORDER BY name LIMIT ?3`, args...)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	names, err := scanNames(rows)
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
	rows, err := s.db.QueryContext(ctx,
		`SELECT holder, incarnation, session, count(*), sum(updated_ns + lease_ns < ?3)
		 FROM baton_election WHERE substr(name, 1, ?1) <> ?2
		 GROUP BY holder, incarnation, session ORDER BY holder, incarnation, session`,
		len(store.SessionPrefix), store.SessionPrefix, now.UnixNano())
	if err != nil {
		return nil, 0, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []store.HolderCount
	for rows.Next() {
		var c store.HolderCount
		if err := rows.Scan(&c.Holder, &c.Incarnation, &c.Session, &c.Names, &c.Silent); err != nil {
			return nil, 0, s.fail(ctx, op, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail(ctx, op, err)
	}
	var jobs int
	if err := s.db.QueryRowContext(ctx,
		`SELECT count(*) FROM baton_jobs j WHERE NOT EXISTS (SELECT 1 FROM baton_election e WHERE e.name = j.name)`).Scan(&jobs); err != nil {
		return nil, 0, s.fail(ctx, op, err)
	}
	return out, jobs, nil
}

// scanNames reads a one-column result of names and closes it.
func scanNames(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
