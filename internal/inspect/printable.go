package inspect

import (
	"strconv"
	"strings"
	"unicode"
)

// Printable returns s with every character that is not printable (control
// characters, invalid UTF-8) escaped as Go escapes it (\n, \x1b, \u200b),
// so that text read from a store cannot move a terminal's cursor or forge
// a line of output. Printable text is returned unchanged.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			if r == unicode.ReplacementChar && !strings.HasPrefix(s[i:], string(unicode.ReplacementChar)) {
				b.WriteString(strconv.QuoteToASCII(s[i : i+1])[1:5]) // \xNN of the invalid byte
				continue
			}
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
