package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/batonhq/baton/store"
)

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// dsn builds the driver's data source name: a file: URI (so that any file
// name works, '?' included) with the connection settings every pooled
// connection applies when it opens.
func dsn(abs string, cfg config) string {
	p := filepath.ToSlash(abs)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:/C:/dir/baton.db
	}
	ms := cfg.busyTimeout.Milliseconds()
	return "file:" + p +
		"?_busy_timeout=" + strconv.FormatInt(ms, 10) +
		"&_synchronous=FULL" +
		"&_txlock=immediate"
}

// sniff refuses a non-empty file that does not start with the SQLite header,
// before SQLite itself ever opens it.
func sniff(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return pathError("open", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil // an empty file is an empty database
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("sqlite: read %s: %w: %w", path, store.ErrUnavailable, err)
	}
	if !bytes.Equal(head[:n], sqliteHeader) || n < len(sqliteHeader) {
		return fmt.Errorf("sqlite: %w: %s is not an SQLite database; baton left it untouched", store.ErrSchema, path)
	}
	return nil
}

// pathError classifies a failure of the file system to open or create
// the store's file at path: one that waiting will not cure (a directory
// that does not exist, a file where a directory should be, no
// permission, a read-only file system, a name too long or a loop of
// links) wraps store.ErrInvalid, as a request that cannot succeed; any
// other (an I/O error, no space left) wraps store.ErrUnavailable.
func pathError(op, path string, err error) error {
	for _, e := range []error{fs.ErrNotExist, fs.ErrPermission, syscall.ENOTDIR, syscall.EROFS, syscall.ENAMETOOLONG, syscall.ELOOP} {
		if errors.Is(err, e) {
			return fmt.Errorf("sqlite: %s %s: %w: %w", op, path, store.ErrInvalid, err)
		}
	}
	return fmt.Errorf("sqlite: %s %s: %w: %w", op, path, store.ErrUnavailable, err)
}

// foreignDatabase is the error for an SQLite database without baton's
// tables, the same for a writer's Open and a reader's.
func foreignDatabase(abs string) error {
	return fmt.Errorf("sqlite: %w: %s is an SQLite database without baton's tables, not a baton store; baton left it untouched", store.ErrSchema, abs)
}

// refuseForeign refuses, before anything writes to it, an existing SQLite
// file that holds a schema (tables, indexes, views, triggers) but no
// baton_meta table: an application's database, which baton must not
// change. It reads the file as openReadOnly does, so that not a byte of
// it changes. An empty file, and a database with no schema at all (a
// baton process switches a new store's file to WAL mode a moment before
// it creates the tables), pass: they become a store.
func refuseForeign(ctx context.Context, abs string, cfg config) error {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return pathError("open", abs, err)
	case fi.IsDir():
		return fmt.Errorf("sqlite: %w: %s is a directory, not a baton store", store.ErrSchema, abs)
	case fi.Size() == 0:
		return nil
	}
	// A file with no -wal beside it is read as immutable (no lock, no
	// write). Another process may be making the store in that instant:
	// an immutable read can then see its tables without their version
	// row. So a file that looks foreign is read once more, with locks,
	// once that process's -wal exists.
	found, objects, err := foreignCheck(ctx, abs, cfg)
	if err == nil && !found && objects > 0 {
		if _, werr := os.Stat(abs + "-wal"); werr == nil {
			found, objects, err = foreignCheck(ctx, abs, cfg)
		}
	}
	switch {
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("sqlite: open: %w: %w", store.ErrUnavailable, ctxErr)
		}
		return classify(abs, "open", cfg.busyTimeout, err)
	case !found && objects > 0:
		return foreignDatabase(abs)
	}
	return nil
}

// foreignCheck reads, without writing, whether abs holds baton's schema
// version (found) and how many schema objects it has.
func foreignCheck(ctx context.Context, abs string, cfg config) (found bool, objects int, err error) {
	params := "&mode=ro"
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		params += "&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn(abs, cfg)+params)
	if err != nil {
		return false, 0, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	defer db.Close()
	_, found, err = schemaVersion(ctx, db)
	if err == nil && !found {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&objects)
	}
	return found, objects, err
}

// openReadOnly is Open with WithReadOnly.
func openReadOnly(ctx context.Context, path string, cfg config) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, store.NoStore(abs)
	case err != nil:
		return nil, pathError("open", abs, err)
	case fi.IsDir():
		return nil, fmt.Errorf("sqlite: %w: %s is a directory, not a baton store", store.ErrSchema, abs)
	case fi.Size() == 0:
		return nil, fmt.Errorf("sqlite: %w: %s is an empty file, not a baton store; baton left it untouched", store.ErrSchema, abs)
	}
	if err := sniff(abs); err != nil {
		return nil, err
	}
	params := "&mode=ro"
	if _, err := os.Stat(abs + "-wal"); errors.Is(err, fs.ErrNotExist) {
		params += "&immutable=1"
	}
	file, err := statID(abs)
	if err != nil {
		return nil, pathError("open", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, cfg)+params)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	s := newStore(db, abs, cfg, file)
	s.readOnly = true
	version, found, err := schemaVersion(ctx, db)
	if err == nil && !found {
		err = foreignDatabase(abs)
	} else if err == nil {
		err = s.checkVersion(version, found)
	} else {
		err = s.fail(ctx, "open", err)
	}
	if err == nil {
		s.id, _, err = readStoreID(ctx, db) // 0: an older store without one
		if err != nil {
			err = s.fail(ctx, "open", err)
		}
	}
	if err == nil {
		s.schema = version
		err = s.prepare(ctx)
	}
	if err != nil {
		s.st.close()
		db.Close()
		return nil, err
	}
	return s, nil
}
