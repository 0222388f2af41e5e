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

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"", 5, ""},
		{"node-1", 6, "node-1"},
		{"node-12", 6, "node-…"},
		{"東京東京東京", 4, "東京東…"},
		{"ab\x1b[2J", 4, "ab…"}, // \x1b does not fit whole: never split
		{"ab\x1b", 6, `ab\x1b`}, // fits exactly, nothing after it
		{"ab\x1bc", 6, `ab…`},   // fits, but the ellipsis would not
		{"a\xffb", 5, "a…"},     // an invalid byte is one escape
		{"a\xffb", 6, `a\xffb`},
		{"abc", 0, "…"}, // width below 1 is 1
		{"x\nholder: evil", 100, `x\nholder: evil`},
	} {
		got := Cell(tc.in, tc.width)
		if got != tc.want {
			t.Errorf("Cell(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > max(tc.width, 1) {
			t.Errorf("Cell(%q, %d) = %q: %d characters", tc.in, tc.width, got, n)
		}
	}
	huge := strings.Repeat("h", 1<<20)
	if got := Cell(huge, 64); got != strings.Repeat("h", 63)+Ellipsis {
		t.Errorf("Cell of 1 MB = %d bytes, want 63 characters and %q", len(got), Ellipsis)
	}
}

// FuzzCell: a cell is String(s) itself when it fits, else a prefix of it
// and the ellipsis, and never wider than asked.
func FuzzCell(f *testing.F) {
	f.Add("x\x1b[2J\nholder: evil", 5)
	f.Add("東京\xff", 3)
	f.Fuzz(func(t *testing.T, s string, width int) {
		width = width%200 + 1
		if width < 1 {
			width += 200
		}
		got, full := Cell(s, width), String(s)
		if utf8.RuneCountInString(got) > width {
			t.Fatalf("Cell(%q, %d) = %q is wider", s, width, got)
		}
		if got != full && !(strings.HasSuffix(got, Ellipsis) && strings.HasPrefix(full, strings.TrimSuffix(got, Ellipsis))) {
			t.Fatalf("Cell(%q, %d) = %q: not String(s) = %q nor a prefix of it with %q", s, width, got, full, Ellipsis)
		}
		if utf8.RuneCountInString(full) <= width && got != full {
			t.Fatalf("Cell(%q, %d) = %q cut a value that fits: %q", s, width, got, full)
		}
	})
}
