package pgtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// initdbArgs are initdb's arguments after -D DIR: a trusting superuser
// "postgres", UTF-8, the C locale, no fsync of what it writes.
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"}

// initCluster makes s.data a new, never started cluster. A pristine cluster
// of the same binaries is kept in the user's cache directory (templateDir)
// and copied, which costs a twentieth of initdb's 0.8 s of CPU (a run of
// the whole suite starts a dozen servers); it reports whether the copy was
// used. Without a usable cache, initdb makes the cluster, and a copy of it
// is cached for the next server.
func (s *Server) initCluster() (copied bool, err error) {
	tmpl := templateDir(s.bindir)
	if tmpl != "" && trusted(tmpl) {
		if err := copyTree(filepath.Join(tmpl, "data"), s.data, s.cred); err == nil {
			return true, nil
		}
		os.RemoveAll(s.data)
	}
	if err := s.initdb(); err != nil {
		return false, err
	}
	if tmpl != "" {
		cache(s.data, tmpl)
	}
	return false, nil
}

// initdb runs initdb into s.data.
func (s *Server) initdb() error {
	cmd := s.command(filepath.Join(s.bindir, "initdb"), append([]string{"-D", s.data}, initdbArgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	return nil
}

// dropTemplate removes the cached cluster of s's binaries: a server made
// from it did not start.
func (s *Server) dropTemplate() {
	if tmpl := templateDir(s.bindir); tmpl != "" {
		os.RemoveAll(tmpl)
	}
}

// templateDir returns where the pristine cluster of the binaries in bindir
// is cached ("" when there is no cache directory): a name derived from
// bindir, the size and modification time of its initdb and postgres, and
// initdb's arguments, so that new binaries never use an old cluster.
func templateDir(bindir string) string {
	root, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintln(h, bindir, initdbArgs)
	for _, b := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(bindir, b))
		if err != nil {
			return ""
		}
		fmt.Fprintln(h, b, fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Join(root, "baton", "pgtest", hex.EncodeToString(h.Sum(nil))[:20])
}

// trusted reports whether the cached cluster at dir may be used: it and
// its data directory are owned by this process's user and nobody else may
// write them (a cluster planted by another user could run commands as the
// server's user).
func trusted(dir string) bool {
	for _, d := range []string{filepath.Dir(dir), dir, filepath.Join(dir, "data")} {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
			return false
		}
	}
	return true
}

// cache copies the new cluster data to dir, atomically (a copy next to it,
// renamed): a concurrent test binary sees the whole cluster or none. Its
// failure only costs the next server an initdb.
func cache(data, dir string) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := dir + ".tmp-" + hex.EncodeToString(b[:])
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return
	}
	if copyTree(data, filepath.Join(tmp, "data"), nil) != nil || os.Rename(tmp, dir) != nil {
		os.RemoveAll(tmp)
	}
}

// copyTree copies the directory src to dst (which must not exist), with
// the modes of its files and directories, owned by cred when it is not
// nil. Only directories and regular files are copied; anything else is an
// error.
func copyTree(src, dst string, cred *credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(path, to, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("pgtest: %s: not a file or a directory", path)
		}
		if cred != nil {
			return os.Lchown(to, int(cred.uid), int(cred.gid))
		}
		return nil
	})
}

func copyFile(from, to string, mode fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
