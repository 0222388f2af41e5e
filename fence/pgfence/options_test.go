package pgfence_test

import (
	"errors"
	"testing"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/fence/pgfence"
)

// TestInstallOptionErrors: Install refuses a bad option before it touches
// the database (there is none here), with an error wrapping the module's
// one field-error type naming the option; so do InstallSQL and LogSQL for
// a bad schema name.
func TestInstallOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		call   string
		option string
		err    func() error
	}{
		{"WithSchema empty", "schema", func() error { _, err := pgfence.Install(t.Context(), nil, pgfence.WithSchema("")); return err }},
		{"WithSchema NUL", "schema", func() error { _, err := pgfence.Install(t.Context(), nil, pgfence.WithSchema("a\x00b")); return err }},
		{"WithKey nil", "key", func() error { _, err := pgfence.Install(t.Context(), nil, pgfence.WithKey(nil)); return err }},
		{"WithGrant public", "grant", func() error {
			_, err := pgfence.Install(t.Context(), nil, pgfence.WithGrant("job", "PUBLIC"))
			return err
		}},
		{"WithGrant empty", "grant", func() error { _, err := pgfence.Install(t.Context(), nil, pgfence.WithGrant("")); return err }},
		{"InstallSQL empty schema", "schema", func() error { _, err := pgfence.InstallSQL(""); return err }},
		{"LogSQL long schema", "schema", func() error { _, err := pgfence.LogSQL(string(make([]byte, 64))); return err }},
	} {
		err := tc.err()
		var oe *baton.OptionError
		switch {
		case !errors.As(err, &oe):
			t.Errorf("%s: %v (%T), want an error wrapping a *baton.OptionError naming %s", tc.call, err, err, tc.option)
		case oe.Option != tc.option:
			t.Errorf("%s: %v names %q, want %q", tc.call, err, oe.Option, tc.option)
		}
	}
}
