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
		piece, n := shown(s, i)
		b.WriteString(piece)
		i += n
	}
	return b.String()
}

// shown returns how String shows the character at s[i], and its length in
// s: the character itself when it is printable, else its escape.
func shown(s string, i int) (piece string, n int) {
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n == 1:
		return `\x` + strconv.FormatUint(uint64(s[i])>>4, 16) + strconv.FormatUint(uint64(s[i])&0xf, 16), n
	case unicode.IsPrint(r):
		return s[i : i+n], n
	default:
		q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
		return q[1 : len(q)-1], n
	}
}

// Ellipsis ends a value that Cell cut short.
const Ellipsis = "…"

// Cell returns String(s) cut to at most width characters (runes), for a
// table column: a value cut short ends with Ellipsis, and an escape such
// as \x1b is never split. It reads s only as far as it shows, so a huge
// value costs no more than a short one. A width below 1 is taken as 1.
// Cell is for showing; JSON output keeps the whole value.
func Cell(s string, width int) string {
	width = max(width, 1)
	var b strings.Builder
	used := 0
	for i := 0; i < len(s); {
		piece, n := shown(s, i)
		w := utf8.RuneCountInString(piece)
		// Room for the piece, and for the ellipsis unless it is the last.
		if used+w > width || (i+n < len(s) && used+w == width) {
			b.WriteString(Ellipsis)
			return b.String()
		}
		b.WriteString(piece)
		used += w
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
