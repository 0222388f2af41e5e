package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// The net drill's flags: every misuse is a one-line usage error (exit 2)
// naming the fix, before anything runs.
func TestDrillNetUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"drill", "--soak", "1m"}, "--soak needs --net"},
		{[]string{"drill", "--seed", "3"}, "--seed needs --net"},
		{[]string{"drill", "--unsafe-no-fence"}, "--unsafe-no-fence needs --net"},
		{[]string{"drill", "--fault", "partition"}, "--fault partition is a network fault: add --net"},
		{[]string{"drill", "--net", "consul"}, `--net "consul": want etcd3, etcd5, postgres`},
		{[]string{"drill", "--net", "etcd3", "--soak", "-1s"}, "--soak -1s: want a positive duration"},
		{[]string{"drill", "--net", "etcd3", "--soak", "1m", "--schedules", "0"}, "--schedules 0: want 1 to 100000"},
		{[]string{"drill", "--net", "etcd3", "--soak", "1m", "--seed", "18446744073709551615", "--schedules", "2"}, "too large for 2 schedules"},
		{[]string{"drill", "--net", "etcd3", "--fault", "tornado"}, `unknown fault "tornado"`},
		{[]string{"drill", "--net", "etcd3", "--soak", "1m", "--fault", "tornado"}, `--fault "tornado" with --soak: want all or one of`},
		{[]string{"drill", "--net", "etcd3", "--soak", "1s"}, "soak duration must be at least 20 rounds"},
		// --procs --store URL: a networked store, not with --net, not
		// without --procs (and its password never shown).
		{[]string{"drill", "--procs", "--store", "sqlite:/tmp/x.db"}, "--procs runs on sqlite (a file in --dir) or on a networked store's URL"},
		{[]string{"drill", "--procs", "--store", "zk://h/x"}, `unknown scheme "zk"`},
		{[]string{"drill", "--net", "etcd3", "--store", "etcd://h:2379"}, "net mode runs its own store; drop --store"},
		{[]string{"drill", "--store", "postgres://u:hunter2@h/db"}, `--store "postgres://u:xxxxx@h/db": want sqlite or mem (a store's URL with --procs)`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runBaton(t, tc.args...)
			if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line with %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// drill --dir makes a missing directory (0700) and keeps its files there; a
// --dir that cannot be one is a one-line usage error naming the fix.
func TestDrillDirCreated(t *testing.T) {
	testenv.ParallelUnlessLong(t) // its own store, files and processes
	dir := filepath.Join(t.TempDir(), "new", "drill")
	// A small batch: the directory is the point (a drill of the default
	// 4,000 lines a batch took two minutes under the race detector).
	code, _, stderr := runBaton(t, "drill", "--dir", dir, "--fault", "crash", "--invoice-lines", "200")
	if code != exitOK {
		t.Fatalf("drill --dir with a missing directory: exit %d\n%s", code, stderr)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("drill --dir %s: %v, %v; want a directory with mode 0700", dir, fi, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "crash-fencing+trigger.baton.db")); len(m) != 1 {
		t.Errorf("drill --dir kept no store in %s", dir)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runBaton(t, "drill", "--dir", filepath.Join(file, "sub"), "--fault", "crash", "--invoice-lines", "200")
	if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "give a directory that exists or that baton can create") {
		t.Fatalf("drill --dir under a file: exit %d, stderr %q; want exit %d and one line naming the fix", code, stderr, exitUsage)
	}
}
