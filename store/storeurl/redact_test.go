package storeurl_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/store/storeurl"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://baton:SECRET@db:5432/app?sslmode=require", "postgres://baton:xxxxx@db:5432/app?sslmode=require"},
		{"postgress://u:SECRET@h/db", "postgress://u:xxxxx@h/db"},
		{"postgres://u@h/db?password=SECRET&x=1", "postgres://u@h/db?password=xxxxx&x=1"},
		{"postgres://u:SECRET@h:port/db", "postgres://u:xxxxx@h:port/db"},
		{"postgres://u:SECRET@[::1/db", "postgres://u:xxxxx@[::1/db"},
		{"host=h user=u password=SECRET dbname=d", "host=h user=u password=xxxxx dbname=d"},
		{"sqlite:/var/lib/baton.db", "sqlite:/var/lib/baton.db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
	} {
		if got := storeurl.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(storeurl.Redact(tc.in), "SECRET") {
			t.Errorf("Redact(%q) keeps the password", tc.in)
		}
	}
	if got := storeurl.Secrets("postgres://u:p%40ss@h/db?password=two"); len(got) < 2 || got[0] != "p@ss" {
		t.Errorf("Secrets = %q", got)
	}
}
