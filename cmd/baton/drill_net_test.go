package main

import (
	"strings"
	"testing"
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
