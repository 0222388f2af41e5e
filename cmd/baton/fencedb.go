package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for a PostgreSQL fence database
	_ "modernc.org/sqlite"             // the "sqlite" driver, for an SQLite fence database

	"github.com/batonhq/baton/fence"
	"github.com/batonhq/baton/store/storeurl"
)

// fenceDB is an open fence database: the resource's own database, where
// the fence table and its log (fence.Dialect.WithLog) live.
type fenceDB struct {
	db     *sql.DB
	d      fence.Dialect
	driver string
}

// openFenceDB opens the fence database url (sqlite:PATH, or a postgres://
// or postgresql:// URL) with the log table logTable. readOnly opens an
// SQLite file read-only (it must exist). The password of url is kept
// from every error (e.secrets).
func (e *env) openFenceDB(ctx context.Context, url, logTable string, readOnly bool) (*fenceDB, error) {
	e.secrets = append(e.secrets, storeurl.Secrets(url)...)
	scheme, rest, _ := strings.Cut(url, ":")
	var driver, dsn string
	var d fence.Dialect
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return nil, usagef("--fence-db %q: want sqlite:PATH", url)
		}
		path := strings.TrimPrefix(rest, "//")
		if _, err := os.Stat(path); err != nil {
			return nil, usagef("--fence-db: %v", err)
		}
		driver, dsn, d = "sqlite", "file:"+path+"?_pragma=busy_timeout(5000)", fence.SQLite
		if readOnly {
			dsn += "&mode=ro"
		}
	case "postgres", "postgresql":
		driver, dsn, d = "pgx", url, fence.Postgres
	default:
		return nil, usagef("--fence-db %q: want sqlite:PATH or a postgres:// URL", storeurl.Redact(url))
	}
	d, err := d.WithLog(logTable)
	if err != nil {
		return nil, usagef("--fence-log: %v", err)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, usagef("--fence-db %s: %v", storeurl.Redact(url), err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("fence database %s unreachable: %w", storeurl.Redact(url), err)
	}
	return &fenceDB{db: db, d: d, driver: driver}, nil
}

// hasLog reports whether the fence database has the log table (as the
// connection resolves its name: PostgreSQL's search_path).
func (f *fenceDB) hasLog(ctx context.Context) (bool, error) {
	q := `SELECT to_regclass($1) IS NOT NULL`
	if f.driver == "sqlite" {
		q = `SELECT count(*) > 0 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?`
	}
	var ok bool
	if err := f.db.QueryRowContext(ctx, q, f.d.LogTable()).Scan(&ok); err != nil {
		return false, fmt.Errorf("fence database: look for the table %s: %w", f.d.LogTable(), err)
	}
	return ok, nil
}

func (f *fenceDB) Close() error { return f.db.Close() }
