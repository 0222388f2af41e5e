package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storedriver"
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
	// One grouped statement, which also says whether a group's session
	// was passed on by a succession; only then are the groups read again
	// and resolved, in one snapshot.
	out, jobs, passed, err := s.countGroups(ctx, s.pool, now)
	if err == nil && passed {
		err = s.readTx(ctx, func(tx pgx.Tx) error {
			if out, jobs, _, err = s.countGroups(ctx, tx, now); err != nil {
				return err
			}
			out, err = s.resolveCounts(ctx, tx, out, now)
			return err
		})
	}
	if err != nil {
		return nil, 0, s.failResolve(ctx, op, err) // a corrupt session record is ErrCorrupt, not unavailable
	}
	return out, jobs, nil
}

// countGroups is CountHolders' grouped statement, and whether the session
// of a group is a dead one with a successor.
func (s *Store) countGroups(ctx context.Context, q querier, now time.Time) (out []store.HolderCount, jobs int, passed bool, err error) {
	passedOn := "false"
	if s.version >= 7 {
		passedOn = `EXISTS (SELECT 1 FROM ` + s.q + `.election d WHERE d.name = e.session AND d.holder = '' AND d.successor <> '')`
	}
	rows, err := q.Query(ctx, `SELECT e.holder, e.incarnation, e.session, count(*),
			count(*) FILTER (WHERE e.updated + make_interval(secs => e.lease_ns / 1e9) < $2),
			(SELECT count(*) FROM `+s.q+`.jobs j WHERE NOT EXISTS (SELECT 1 FROM `+s.q+`.election x WHERE x.name = j.name)),
			`+passedOn+`
		FROM `+s.q+`.election e WHERE NOT starts_with(e.name, $1)
		GROUP BY e.holder, e.incarnation, e.session ORDER BY e.holder, e.incarnation, e.session`, store.SessionPrefix, now)
	if err != nil {
		return nil, 0, false, err
	}
	defer rows.Close()
	jobs = -1
	for rows.Next() {
		var c store.HolderCount
		var p bool
		if err := rows.Scan(&c.Holder, &c.Incarnation, &c.Session, &c.Names, &c.Silent, &jobs, &p); err != nil {
			return nil, 0, false, err
		}
		out, passed = append(out, c), passed || p
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	if jobs < 0 { // no election record at all: every job is without one
		if err := q.QueryRow(ctx, `SELECT count(*) FROM `+s.q+`.jobs`).Scan(&jobs); err != nil {
			return nil, 0, false, err
		}
	}
	return out, jobs, passed, nil
}

// resolveCounts counts each group of gs held through a session that a
// succession passed on as its successor's (storedriver.ResolveCounts), in
// tx.
func (s *Store) resolveCounts(ctx context.Context, tx pgx.Tx, gs []store.HolderCount, now time.Time) ([]store.HolderCount, error) {
	return storedriver.ResolveCounts(gs, func(raws []store.Record) ([]store.Record, error) {
		res, err := s.newChain("count holders", tx, false).resolve(ctx, raws, false)
		if err != nil {
			return nil, err
		}
		recs := make([]store.Record, len(res))
		for i, r := range res {
			recs[i] = r.rec
		}
		return recs, nil
	}, func(g store.HolderCount, since time.Time) (int, error) {
		var from *time.Time // NULL: greatest() leaves updated as it is
		if !since.IsZero() {
			from = &since
		}
		n := 0
		err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE greatest(updated, $4) + make_interval(secs => lease_ns / 1e9) < $5)
			FROM `+s.q+`.election WHERE session = $1 AND holder = $2 AND incarnation = $3 AND NOT starts_with(name, $6)`,
			g.Session, g.Holder, g.Incarnation, from, now, store.SessionPrefix).Scan(&n)
		return n, err
	})
}
