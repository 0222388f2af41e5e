package sqlite

import (
	"context"
	"database/sql"
	"math"
	"time"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
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

// CountHolders implements store.Store with one grouped query, in one read
// transaction with the chains of the sessions the groups are held through:
// a group held through a session that a succession passed on is counted
// as its successor's (resolved, see chain), its silent records again with
// the resolved Updated.
func (s *Store) CountHolders(ctx context.Context, now time.Time) ([]store.HolderCount, int, error) {
	const op = "count holders"
	if err := s.enter(ctx, op); err != nil {
		return nil, 0, err
	}
	var out []store.HolderCount
	var jobs int
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx,
			`SELECT holder, incarnation, `+s.sessionCol()+`, count(*), sum(updated_ns + lease_ns < ?3)
			 FROM baton_election WHERE substr(name, 1, ?1) <> ?2
			 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
			len(store.SessionPrefix), store.SessionPrefix, now.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c store.HolderCount
			if err := rows.Scan(&c.Holder, &c.Incarnation, &c.Session, &c.Names, &c.Silent); err != nil {
				return err
			}
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if s.schema >= 7 {
			if out, err = s.resolveCounts(ctx, tx, out, now); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx,
			`SELECT count(*) FROM baton_jobs j WHERE NOT EXISTS (SELECT 1 FROM baton_election e WHERE e.name = j.name)`).Scan(&jobs)
	})
	if err != nil {
		return nil, 0, err
	}
	return out, jobs, nil
}

// resolveCounts counts each group of gs held through a session that a
// succession passed on as its successor's (storedriver.ResolveCounts), in
// tx.
func (s *Store) resolveCounts(ctx context.Context, tx *sql.Tx, gs []store.HolderCount, now time.Time) ([]store.HolderCount, error) {
	return storedriver.ResolveCounts(gs, func(raws []store.Record) ([]store.Record, error) {
		sessions := make([]string, len(raws))
		for i, r := range raws {
			sessions[i] = r.Session
		}
		getMany := tx.StmtContext(ctx, s.st.getMany)
		defer getMany.Close()
		c := chain{}
		if err := c.load(ctx, getMany, sessions); err != nil {
			return nil, err
		}
		recs := make([]store.Record, len(raws))
		for i, raw := range raws {
			r, err := store.Resolve(raw, c.session, nil)
			if err != nil {
				return nil, err
			}
			recs[i] = r
		}
		return recs, nil
	}, func(g store.HolderCount, since time.Time) (int, error) {
		from := int64(math.MinInt64)
		if !since.IsZero() {
			from = since.UnixNano()
		}
		n := 0
		err := tx.QueryRowContext(ctx,
			`SELECT coalesce(sum(max(updated_ns, ?4) + lease_ns < ?5), 0) FROM baton_election
			 WHERE session = ?1 AND holder = ?2 AND incarnation = ?3 AND substr(name, 1, ?6) <> ?7`,
			g.Session, g.Holder, g.Incarnation, from, now.UnixNano(), len(store.SessionPrefix), store.SessionPrefix).Scan(&n)
		return n, err
	})
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
