package main

import (
	"bytes"
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// printFlags writes the flags of fs as the README writes them, with two
// dashes ("  --lease duration"), each with its usage and default: the
// flag package's own listing (fs.PrintDefaults), whose flag lines start
// "  -NAME". Every command's --help prints its flags with it (newFlagSet).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if strings.HasPrefix(l, "  -") {
			l = "  --" + l[len("  -"):]
		}
		io.WriteString(w, l)
	}
}

// flagErrName matches the flag named in the flag package's parse errors
// ("flag provided but not defined: -x", "invalid value ... for flag -x:",
// "flag needs an argument: -x"), which name it with one dash.
var flagErrName = regexp.MustCompile(`(not defined: |for flag |needs an argument: )-(-?)([^\s:]*)`)

// flagError rewrites the flag package's parse error msg of fs to name the
// flag with two dashes, as --help and the README do, and adds a "did you
// mean" for a flag that is not defined.
func flagError(fs *flag.FlagSet, msg string) string {
	msg = flagErrName.ReplaceAllString(msg, "$1--$3")
	const undefined = "flag provided but not defined: --"
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		var all []string
		fs.VisitAll(func(f *flag.Flag) { all = append(all, f.Name) })
		if s := suggest(name, all); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return msg
}

// suggest returns the candidate a mistyped word most likely meant: the
// nearest by edit distance if it is at most 2 (and less than the word's
// length, so that "x" does not suggest every one-letter name), else the
// only candidate the word is a prefix of, else "".
func suggest(word string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD && d < len(word) {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	var prefixed []string
	for _, c := range candidates {
		if word != "" && strings.HasPrefix(c, word) {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// didYouMean is ` (did you mean "X"?)` for the suggestion X for word
// among candidates, or "" when there is none.
func didYouMean(word string, candidates []string) string {
	if s := suggest(word, candidates); s != "" {
		return " (did you mean " + strconv.Quote(s) + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (names are ASCII). Words longer than 64 bytes are not compared: their
// distance is reported as 64, far beyond a suggestion.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
