// Package escape makes text read from a store safe to show to people.
//
// A store holds what its writers put there: a holder, a node id, a detail
// or a log event may carry an ESC sequence that redraws a terminal, a
// newline that forges another line of output, or a bidirectional override
// that reorders what is shown. Every human-readable output of baton (the
// read commands, the log lines it prints about a store's records, the
// 'baton serve' page) passes such text through String first. JSON output
// is escaped by its encoder and does not need it.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every character that is not printable written as
// the escape a Go string literal would use: \n, \t, \x1b, \u202e, and \xff
// for a byte that is not valid UTF-8. Printable characters, ordinary
// UTF-8 letters and symbols among them, are left alone, and so are the
// space, quotes and backslashes: String is for showing, not for parsing
// back (use JSON for that). A string with nothing to escape is returned as
// it is.
func String(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// printable reports whether String leaves s as it is.
func printable(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !unicode.IsPrint(r) {
			return false
		}
		i += n
	}
	return true
}
