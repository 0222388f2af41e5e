// Command gen writes vectors.json: parameter sets for the round model with
// the results that the lesson's own JavaScript model returns for them, and
// number formatting cases with what JavaScript's toFixed prints for them.
//
// The lesson's code is not part of this repository. gen reads it at run time
// from the lesson's text (the fenced js block whose first line names
// leader/election.mjs), makes its two scenario constants settable, writes it
// to a temporary directory and runs it with node.
//
// Usage, from the repository root:
//
//	go run ./internal/lab/model/testdata/gen -lesson ../shared/seeds/000_5ceb281bcd01e645.txt -out internal/lab/model/testdata/vectors.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// params mirrors model.Params; gen does not import the package it checks.
type params struct {
	Nodes             int   `json:"nodes"`
	Lease             int   `json:"lease"`
	Renewal           int   `json:"renewal"`
	Outage            int   `json:"outage"`
	Start             int   `json:"start"`
	Triggers          []int `json:"triggers"`
	Rounds            int   `json:"rounds"`
	Fencing           bool  `json:"fencing"`
	PersistentTrigger bool  `json:"persistentTrigger"`
}

type runVector struct {
	Valid  bool            `json:"valid"`
	Params params          `json:"params"`
	Want   json.RawMessage `json:"want"`
}

type fixedCase struct {
	X      float64 `json:"x"`
	Digits int     `json:"digits"`
	Want   string  `json:"want,omitempty"`
}

const driver = `import { readFileSync } from "node:fs";
import { run, setScenario } from "./election.mjs";
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const runs = input.runs.map((p) => {
  setScenario(p.triggers, p.start);
  return run({ nodes: p.nodes, lease: p.lease, renewal: p.renewal, outage: p.outage,
    fencing: p.fencing, persistentTrigger: p.persistentTrigger, rounds: p.rounds });
});
const fixed = input.fixed.map((c) => c.x.toFixed(c.digits));
process.stdout.write(JSON.stringify({ runs, fixed }));
`

func main() {
	lesson := flag.String("lesson", "", "path of the lesson text holding leader/election.mjs (required)")
	out := flag.String("out", "internal/model/testdata/vectors.json", "file to write")
	valid := flag.Int("valid", 3200, "random valid parameter sets")
	edge := flag.Int("edge", 400, "random parameter sets outside the valid ranges")
	seed := flag.Uint64("seed", 1, "seed of the parameter generator")
	flag.Parse()
	if *lesson == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen -lesson PATH [-out PATH] [-valid N] [-edge N] [-seed N]")
		os.Exit(2)
	}
	if err := generate(*lesson, *out, *valid, *edge, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(lessonPath, out string, nValid, nEdge int, seed uint64) error {
	text, err := os.ReadFile(lessonPath)
	if err != nil {
		return err
	}
	js, err := electionModule(string(text))
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "baton-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	runs := runSets(rand.New(rand.NewPCG(seed, 0x6261746f6e)), nValid, nEdge)
	fixed := fixedCases(rand.New(rand.NewPCG(seed, 0x66697865)))
	input, err := json.Marshal(map[string]any{"runs": paramsOf(runs), "fixed": fixed})
	if err != nil {
		return err
	}
	for name, body := range map[string]string{
		"election.mjs": js, "driver.mjs": driver, "input.json": string(input),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	cmd := exec.Command("node", "driver.mjs", "input.json")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node: %v: %s", err, stderr.String())
	}
	var got struct {
		Runs  []json.RawMessage `json:"runs"`
		Fixed []string          `json:"fixed"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		return fmt.Errorf("node output: %v", err)
	}
	if len(got.Runs) != len(runs) || len(got.Fixed) != len(fixed) {
		return errors.New("node returned a different number of answers than it was asked")
	}
	for i := range runs {
		runs[i].Want = got.Runs[i]
	}
	for i := range fixed {
		fixed[i].Want = got.Fixed[i]
	}
	return writeVectors(out, runs, fixed)
}

// electionModule returns the lesson's election module with its scenario
// constants turned into variables that setScenario assigns.
func electionModule(text string) (string, error) {
	var block string
	for _, part := range strings.Split(text, "```js\n")[1:] {
		body, _, ok := strings.Cut(part, "\n```")
		first, _, _ := strings.Cut(body, "\n")
		if ok && strings.Contains(first, "leader/election.mjs") {
			block = body + "\n"
			break
		}
	}
	if block == "" {
		return "", errors.New("no js block for leader/election.mjs in the lesson")
	}
	for _, name := range []string{"TRIGGER", "START"} {
		decl := "export const " + name + " ="
		if strings.Count(block, decl) != 1 {
			return "", fmt.Errorf("the lesson's module does not declare %q exactly once", decl)
		}
		block = strings.Replace(block, decl, "export let "+name+" =", 1)
	}
	return block + "export function setScenario(triggers, start) { TRIGGER = triggers; START = start; }\n", nil
}

func paramsOf(runs []runVector) []params {
	ps := make([]params, len(runs))
	for i, r := range runs {
		ps[i] = r.Params
	}
	return ps
}

// runSets returns the lesson's own runs, nValid random sets inside the valid
// ranges and nEdge sets with at least one field outside them.
func runSets(r *rand.Rand, nValid, nEdge int) []runVector {
	lesson := params{Nodes: 5, Lease: 3, Renewal: 3, Outage: 5, Start: 6, Triggers: []int{6, 12, 18, 24}, Rounds: 24}
	var runs []runVector
	add := func(valid bool, p params) { runs = append(runs, runVector{Valid: valid, Params: p}) }
	for combo := range 4 {
		p := lesson
		p.Fencing, p.PersistentTrigger = combo&1 != 0, combo&2 != 0
		add(true, p)
	}
	for _, lease := range []int{2, 3, 5, 8} {
		for _, outage := range []int{5, 2} {
			p := lesson
			p.Lease, p.Outage = lease, outage
			add(true, p)
		}
	}
	between := func(lo, hi int) int { return lo + r.IntN(hi-lo+1) }
	triggers := func(lo, hi int) []int {
		ts := make([]int, between(0, 6))
		for i := range ts {
			ts[i] = between(lo, hi)
		}
		if len(ts) >= 2 && r.IntN(3) == 0 {
			ts[len(ts)-1] = ts[0] // a duplicate
		}
		return ts
	}
	for i := range nValid {
		add(true, params{
			Nodes: between(2, 7), Lease: between(1, 9), Renewal: between(1, 7),
			Outage: between(0, 12), Start: between(1, 15), Triggers: triggers(1, 45),
			Rounds: between(1, 40), Fencing: i&1 != 0, PersistentTrigger: i&2 != 0,
		})
	}
	// Outside the valid ranges. Negative node counts are left out: the
	// lesson's model throws on them.
	for i := range nEdge {
		p := params{
			Nodes: between(2, 7), Lease: between(1, 9), Renewal: between(1, 7),
			Outage: between(0, 12), Start: between(1, 15), Triggers: triggers(1, 45),
			Rounds: between(1, 40), Fencing: i&1 != 0, PersistentTrigger: i&2 != 0,
		}
		for broken := 0; broken == 0; {
			for f := range 7 {
				if r.IntN(4) != 0 {
					continue
				}
				broken++
				switch f {
				case 0:
					p.Nodes = between(0, 1)
				case 1:
					p.Lease = between(-3, 0)
				case 2:
					p.Renewal = between(-4, 0)
				case 3:
					p.Outage = between(-3, -1)
				case 4:
					p.Start = between(-3, 0)
				case 5:
					p.Rounds = between(-2, 0)
				case 6:
					p.Triggers = append(triggers(-3, 45), between(-3, 0))
				}
			}
		}
		add(false, p)
	}
	return runs
}

// fixedCases returns numbers shaped like the cost table's: shares of rounds
// times handover counts, times invoice lines, and exact binary ties.
func fixedCases(r *rand.Rand) []fixedCase {
	var cs []fixedCase
	for range 600 {
		share := float64(r.IntN(41)) / float64(1+r.IntN(40))
		x := float64(r.IntN(25)) * share
		cs = append(cs, fixedCase{X: share, Digits: 4}, fixedCase{X: x, Digits: 2},
			fixedCase{X: x * float64(r.IntN(10001)), Digits: 0})
	}
	for k := range 64 {
		cs = append(cs, fixedCase{X: float64(k) / 8, Digits: 2}, fixedCase{X: float64(k) / 2, Digits: 0},
			fixedCase{X: float64(k) / 32, Digits: 4})
	}
	return cs
}

// writeVectors writes one vector per line, so that a change shows as a
// readable diff.
func writeVectors(path string, runs []runVector, fixed []fixedCase) error {
	var b bytes.Buffer
	b.WriteString("{\"note\": \"generated by internal/lab/model/testdata/gen from the lesson's model; do not edit\",\n\"runs\": [\n")
	for i, v := range runs {
		line, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(line)
		if i < len(runs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("],\n\"toFixed\": [\n")
	for i, c := range fixed {
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		b.Write(line)
		if i < len(fixed)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return os.WriteFile(path, b.Bytes(), 0o644)
}
