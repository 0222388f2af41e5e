package escape

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"node-1", "node-1"},
		{`a "quoted" back\slash`, `a "quoted" back\slash`},
		{"Zürich 東京 ✓ é", "Zürich 東京 ✓ é"},
		{"x\x1b[2J\nholder: evil", `x\x1b[2J\nholder: evil`},
		{"tab\there\r", `tab\there\r`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1 \u009b csi", `c1 \u009b csi`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"nbsp\u00a0", `nbsp\u00a0`},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzString: the result is valid UTF-8 of printable characters only,
// and a string of printable characters comes back unchanged.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "node", "x\x1b[2J\nholder: evil", "\xff", "\u202e", "東京"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q is not valid UTF-8", s, got)
		}
		for _, r := range got {
			if !unicode.IsPrint(r) {
				t.Fatalf("String(%q) = %q holds the unprintable %U", s, got, r)
			}
		}
		if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 && got != s {
			t.Fatalf("String(%q) = %q changed a printable string", s, got)
		}
	})
}
