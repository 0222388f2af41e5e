package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/batonhq/baton/store/storeurl"
)

// ledgerTest makes "ledgertest:" a scheme whose store keeps at most 100
// ledger rows a job (as the Lease store, store/kube, declares 500) for
// the test, without registering it for the others.
func ledgerTest(t *testing.T) {
	saved := lookupScheme
	t.Cleanup(func() { lookupScheme = saved })
	lookupScheme = func(u string) (storeurl.Scheme, bool) {
		if strings.HasPrefix(u, "ledgertest:") {
			return storeurl.Scheme{Names: []string{"ledgertest"}, Form: "ledgertest:", LedgerRows: 100}, true
		}
		return saved(u)
	}
}

// A scheduled job whose retention keeps more rows than its store's ledger
// holds is refused before the store is opened, in one line naming the
// fix, exit 2; --keep-rows within the bound, or a job with no schedule,
// is not.
func TestRunRefusesALedgerTooLong(t *testing.T) {
	ledgerTest(t)
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--every", "1m"}, "baton run: the ledgertest store keeps at most 100 run ledger rows a job, and the retention keeps 10000 rows (--keep-rows 10000): give --keep-rows 100 or fewer\n"},
		{[]string{"--every", "1m", "--keep-rows", "0"}, "baton run: the ledgertest store keeps at most 100 run ledger rows a job, and the retention keeps every row (--keep-rows 0): give --keep-rows 100 or fewer\n"},
		{[]string{"--cron", "0 2 * * *", "--keep-rows", "101"}, "baton run: the ledgertest store keeps at most 100 run ledger rows a job, and the retention keeps 101 rows (--keep-rows 101): give --keep-rows 100 or fewer\n"},
	} {
		e, _, errb, _ := shared()
		args := append([]string{"run", "--store", "ledgertest:"}, append(tc.args, "j", "--", "true")...)
		if code := e.run(t.Context(), args); code != exitUsage || errb.String() != tc.line {
			t.Errorf("baton %q: exit %d, stderr %q; want exit 2 and %q", args, code, errb.String(), tc.line)
		}
	}
	for _, args := range [][]string{
		{"--store", "ledgertest:", "--every", "1m", "--keep-rows", "100", "j", "--", "true"},
		{"--store", "ledgertest:", "j", "--", "true"},
		{"--every", "1m", "j", "--", "true"}, // the default store keeps every row
	} {
		var out, errb bytes.Buffer
		f, done, code := parseRun(&env{stdout: &out, stderr: &errb}, args)
		if done || code != 0 {
			t.Fatalf("parseRun(%q): exit %d, %s", args, code, errb.String())
		}
		if _, err := f.check(); err != nil {
			t.Errorf("baton run %q: %v; want it accepted", args, err)
		}
	}
}
