package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/batonhq/baton/store"
)

// fileID is what names one file on this host: its device and inode. A path
// that names another fileID than the one Open found names another store.
type fileID struct{ dev, ino uint64 }

// statID returns the fileID of path.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, nil // no inode on this platform: the store id check remains
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil //nolint:unconvert // Dev is int32 on some platforms
}

// checkFile returns an error wrapping store.ErrReplaced when the store's
// path no longer names the file Open opened: it was deleted, moved, or
// replaced by another file (a restored backup, a fresh store another
// process created). The open connections would go on reading and writing
// the unlinked file, which nobody else sees: a leader renewing there would
// lead alone on a store that no longer exists.
func (s *Store) checkFile(op string) error {
	id, err := statID(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: %s: %w: %s no longer exists (deleted or moved while open)", op, store.ErrReplaced, s.path)
	case err != nil:
		return fmt.Errorf("sqlite: %s: %w: %s: %w", op, store.ErrUnavailable, s.path, err)
	case id != s.file:
		return fmt.Errorf("sqlite: %s: %w: %s is now another file than the one opened (replaced or restored while open)", op, store.ErrReplaced, s.path)
	}
	return nil
}

// storeIDKey is the baton_meta key of the store id: a random 64-bit
// integer written when the store is created, never changed.
const storeIDKey = "store_id"

// readStoreID returns the store id, and found false when the store has
// none yet (created by an older baton).
func readStoreID(ctx context.Context, q queryRower) (id int64, found bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT value FROM baton_meta WHERE key = '`+storeIDKey+`'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// checkStoreID returns an error wrapping store.ErrReplaced when the file
// holds another store than the one Open found (a copy of another store
// written over it in place). It runs inside every write transaction.
func (s *Store) checkStoreID(ctx context.Context, op string, tx *sql.Tx) error {
	id, found, err := readStoreID(ctx, tx)
	if err != nil {
		return err
	}
	if !found || id != s.id {
		return fmt.Errorf("sqlite: %s: %w: %s now holds store %s, not the store %s this process opened (overwritten while open)",
			op, store.ErrReplaced, s.path, formatID(id), formatID(s.id))
	}
	return nil
}

func formatID(id int64) string { return strconv.FormatUint(uint64(id), 16) }

// StoreID implements store.Identifier: the id made when the store was
// created, in hexadecimal.
func (s *Store) StoreID() string { return formatID(s.id) }

// createFile creates path with mode 0600 if it does not exist, so that the
// store, and the -wal and -shm files SQLite creates with the database's
// mode, are readable by their owner only.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("sqlite: create %s: %w: %w", path, store.ErrUnavailable, err)
	}
	return f.Close()
}
