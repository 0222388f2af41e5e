package store

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// The ASCII fast path of CheckName accepts exactly the bytes the rune
// check accepts: U+0020 to U+007E.
func TestPrintableASCIIIsUnicodePrint(t *testing.T) {
	for c := range 0x80 {
		s := "a" + string(rune(c))
		if got, want := printableASCII(s), unicode.IsPrint(rune(c)); got != want {
			t.Errorf("printableASCII(%q) = %v, unicode.IsPrint says %v", s, got, want)
		}
	}
	if printableASCII("") {
		t.Error(`printableASCII("") = true`)
	}
}

// CheckName takes printable names, ASCII or not, and refuses the empty,
// the too long, the invalid UTF-8 and the unprintable.
func TestCheckName(t *testing.T) {
	for _, ok := range []string{"job", "shard-1", "a b", "~", "zürich", strings.Repeat("x", MaxNameLen)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a\nb", "a\x7f", "\xff", "a\u0085", strings.Repeat("x", MaxNameLen+1)} {
		if err := CheckName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
