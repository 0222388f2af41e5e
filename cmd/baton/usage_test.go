package main

import (
	"regexp"
	"strings"
	"testing"
)

// helpCommands are the argument lists whose --help lists flags: every
// command, and the operations of those that dispatch to others.
func helpCommands() [][]string {
	var all [][]string
	for _, c := range commands() {
		all = append(all, []string{c.name})
	}
	for _, c := range modelSubcommands() {
		all = append(all, []string{"model", c.name})
	}
	for _, c := range calcSubcommands() {
		all = append(all, []string{"calc", c.name})
	}
	for _, op := range []string{"install", "sql", "proxy"} {
		all = append(all, []string{"fence", op})
	}
	for _, b := range []string{"hold", "takeover", "balance", "idle"} {
		all = append(all, []string{"bench", b})
	}
	return all
}

// Every command's --help names its flags as the README does, with two
// dashes, and still says their defaults.
func TestHelpPrintsDoubleDashFlags(t *testing.T) {
	oneDash := regexp.MustCompile(`(?m)^  -[A-Za-z]`)
	for _, args := range helpCommands() {
		code, out, stderr := runBaton(t, append(args, "--help")...)
		if code != exitOK {
			t.Errorf("baton %s --help: exit %d: %s", strings.Join(args, " "), code, stderr)
			continue
		}
		if l := oneDash.FindString(out); l != "" {
			t.Errorf("baton %s --help lists a flag with one dash:\n%s", strings.Join(args, " "), out)
		}
	}
	_, out, _ := runBaton(t, "status", "--help")
	if !regexp.MustCompile(`(?m)^  --limit int\n.*\(default 50\)$`).MatchString(out) {
		t.Errorf("baton status --help does not list --limit with its type and default:\n%s", out)
	}
}

// A mistyped command, subcommand or flag gets a "did you mean" in its
// one-line usage error (exit 2); a word near nothing gets none.
func TestDidYouMean(t *testing.T) {
	checkUsageError(t, []string{"runn"}, `unknown command "runn" (did you mean "run"?)`)
	checkUsageError(t, []string{"stauts"}, `(did you mean "status"?)`)
	checkUsageError(t, []string{"histor"}, `(did you mean "history"?)`)
	checkUsageError(t, []string{"susp"}, `(did you mean "suspend"?)`) // a prefix
	checkUsageError(t, []string{"model", "mesure"}, `(did you mean "measure"?)`)
	checkUsageError(t, []string{"fence", "sqll"}, `(did you mean "sql"?)`)
	checkUsageError(t, []string{"status", "--stor", "mem:"}, "not defined: --stor; did you mean --store?")
	checkUsageError(t, []string{"run", "--leas", "5s", "j", "--", "true"}, "not defined: --leas; did you mean --lease?")
	checkUsageError(t, []string{"runs", "--lim", "3", "j"}, "did you mean --limit?") // a prefix
	code, _, stderr := runBaton(t, "zzzzzzzz")
	if code != exitUsage || strings.Contains(stderr, "did you mean") {
		t.Errorf("baton zzzzzzzz: exit %d, %q; want exit 2 and no suggestion", code, stderr)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"run", "runs", "status", "serve", "sessions"}
	for _, tc := range []struct{ word, want string }{
		{"rnu", "run"},
		{"statsu", "status"},
		{"sess", "sessions"},
		{"se", ""}, // a prefix of three
		{"x", ""},  // one letter is near every short name
		{"", ""},
		{"zzzzzz", ""},
	} {
		if got := suggest(tc.word, cands); got != tc.want {
			t.Errorf("suggest(%q) = %q; want %q", tc.word, got, tc.want)
		}
	}
}

// 'baton history' without NAME refuses a bad page in one line (exit 2),
// and listing flags with a NAME.
func TestHistoryListBadInput(t *testing.T) {
	checkUsageError(t, []string{"history", "--events", "0"}, "invalid --events 0", "want 1 to 1000")
	checkUsageError(t, []string{"history", "--limit", "1001"}, "invalid --limit 1001", "want 1 to 1000")
	checkUsageError(t, []string{"history", "--events", "3", "billing"}, "list names; give them without NAME")
	checkUsageError(t, []string{"history", "--state", "asleep"}, "asleep")
}
