package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModelGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"model_measure.golden", []string{"model", "measure"}},
		{"model_cost.golden", []string{"model", "cost"}},
		{"model_cost.golden", []string{"model", "cost", "--invoice-lines", "4000", "--handovers", "6,12"}},
		{"model_measure.golden", []string{"model", "measure", "--leases", "2,3,5,8", "--outages", "5,2"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, stderr := runBaton(t, tt.args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			checkGolden(t, tt.golden, out)
		})
	}
}

// lessonPath is the course lesson, kept outside the repository beside it.
const lessonPath = "../../../shared/seeds/000_5ceb281bcd01e645.txt"

// lessonOutputBlocks returns the fenced blocks without a language tag: the
// lesson's printed output. Code blocks (```js) are skipped.
func lessonOutputBlocks(text string) []string {
	var blocks, cur []string
	in, code := false, false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```") && !in:
			in, code, cur = true, line != "```", nil
		case strings.HasPrefix(line, "```"):
			if !code {
				blocks = append(blocks, strings.Join(cur, "\n")+"\n")
			}
			in = false
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// TestGoldenMatchesLesson checks the golden files against the lesson's own
// printed blocks, when the lesson is present next to the repository.
func TestGoldenMatchesLesson(t *testing.T) {
	text, err := os.ReadFile(lessonPath)
	if os.IsNotExist(err) {
		t.Skipf("lesson not found at %s (it lives outside the repository); skipping", lessonPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	blocks := lessonOutputBlocks(string(text))
	if len(blocks) != 2 {
		t.Fatalf("found %d output blocks in the lesson, want 2", len(blocks))
	}
	for i, name := range []string{"model_measure.golden", "model_cost.golden"} {
		golden, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if string(golden) != blocks[i] {
			t.Errorf("testdata/%s differs from the lesson's block %d:\n got:\n%s\nwant:\n%s", name, i+1, golden, blocks[i])
		}
	}
}

func TestModelRunJSON(t *testing.T) {
	code, out, _ := runBaton(t, "model", "run", "--fencing", "--persistent-trigger", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one line, got %q", out)
	}
	var got map[string]int
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"started": 4, "missed": 0, "doubleStarts": 0, "rejected": 2, "delayedRounds": 2,
		"twoLeaderRounds": 2, "leaderlessRounds": 2, "handoverRounds": 3, "handovers": 1}
	if len(got) != len(want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %d (present %v), want %d", k, g, ok, v)
		}
	}
}

func TestModelRunTable(t *testing.T) {
	code, out, _ := runBaton(t, "model", "run", "--triggers", "24,12,12,99,6,18")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, line := range []string{
		"batches started              3\n",
		"batches missed               1\n",
		"double-started batches       1\n",
		"two-leader rounds            2\n",
		"handovers                    1\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

func TestModelScan(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		code, out, _ := runBaton(t, "model", "scan", "--leases", "2,3,5,8", "--outages", "5,2")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		golden, err := os.ReadFile(filepath.Join("testdata", "model_measure.golden"))
		if err != nil {
			t.Fatal(err)
		}
		// The scan table is the last six lines of the measure block.
		lines := strings.SplitAfter(string(golden), "\n")
		want := strings.Join(lines[len(lines)-7:], "")
		if out != want {
			t.Errorf("got:\n%s\nwant:\n%s", out, want)
		}
	})
	t.Run("csv", func(t *testing.T) {
		code, out, _ := runBaton(t, "model", "scan", "--leases", "3,8", "--outages", "5", "--csv")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		want := "lease,outage,started,missed,doubleStarts,rejected,delayedRounds,twoLeaderRounds,leaderlessRounds,handoverRounds,handovers\n" +
			"3,5,3,1,1,0,0,2,2,3,1\n" +
			"8,5,3,1,0,0,0,0,5,0,0\n"
		if out != want {
			t.Errorf("got:\n%s\nwant:\n%s", out, want)
		}
	})
}

func TestModelUsageErrors(t *testing.T) {
	tests := []struct {
		args  []string
		wants []string
	}{
		{[]string{"model", "run", "--nodes", "1"}, []string{"--nodes", "2 to"}},
		{[]string{"model", "run", "--lease", "0"}, []string{"--lease", "at least 1"}},
		{[]string{"model", "run", "--renewal", "0"}, []string{"--renewal", "at least 1"}},
		{[]string{"model", "run", "--outage", "-1"}, []string{"--outage", "at least 0"}},
		{[]string{"model", "run", "--start", "0"}, []string{"--start", "at least 1"}},
		{[]string{"model", "run", "--rounds", "0"}, []string{"--rounds", "1 to"}},
		{[]string{"model", "run", "--triggers", "6,x"}, []string{"-triggers", "comma-separated"}},
		{[]string{"model", "run", "--triggers", "6,0"}, []string{"--triggers", "at least 1"}},
		{[]string{"model", "run", "--bogus"}, []string{"-bogus", "not defined"}},
		{[]string{"model", "run", "stray"}, []string{`"stray"`}},
		{[]string{"model", "measure", "--leases", "0"}, []string{"--leases", "at least 1"}},
		{[]string{"model", "measure", "stray"}, []string{`"stray"`}},
		{[]string{"model", "cost", "--invoice-lines", "-5"}, []string{"--invoice-lines", "at least 0"}},
		{[]string{"model", "cost", "--handovers", "6,x"}, []string{"-handovers"}},
		{[]string{"model", "cost", "--handovers", ""}, []string{"--handovers", "at least one"}},
		{[]string{"model", "scan", "--outages", "-1"}, []string{"--outages", "at least 0"}},
		{[]string{"model", "scan", "--lease", "3"}, []string{"-lease", "not defined"}},
		{[]string{"model"}, []string{"missing subcommand"}},
		{[]string{"model", "walk"}, []string{`"walk"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			checkUsageError(t, tt.args, tt.wants...)
		})
	}
}

func TestModelHelp(t *testing.T) {
	for _, args := range [][]string{{"model", "--help"}, {"model", "run", "--help"}, {"help", "model"}} {
		code, out, _ := runBaton(t, args...)
		if code != exitOK || out == "" {
			t.Errorf("baton %s: exit %d, output %q", strings.Join(args, " "), code, out)
		}
	}
}
