// Package linearize checks, with porcupine, that the fence of a test
// cluster behaved as one register per name: its operations are the fenced
// writes the nodes recorded (package history), a write accepted when its
// token is not below the highest accepted so far, raising it, and refused
// otherwise.
//
// It is apart from package history so that the operator's binary, which
// links history for 'baton verify', does not link porcupine: only the
// lab's drill (internal/lab/drill/netdrill) uses it.
//
// What it does not guarantee: a verdict on every history. porcupine's
// search is bounded (30s per name); past it the verdict is "Unknown",
// which is not a violation.
package linearize

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/batonhq/baton/internal/history"
)

// timeout bounds porcupine's search per name.
const timeout = 30 * time.Second

// Evidence is porcupine's linearization of each name's fence, for its
// HTML timelines (Write).
type Evidence struct {
	info  map[string]porcupine.LinearizationInfo
	names []string
}

// Check checks the fenced writes in recs as a linearizable register per
// name. It sets res.Linearizable to porcupine's verdict ("Ok", "Illegal",
// or "Unknown" when the search ran out of time) and adds a "linearizable"
// violation to res for each name whose fence's answers are not those of
// such a register.
func Check(res *history.Result, recs []history.Record) Evidence {
	ev := Evidence{info: map[string]porcupine.LinearizationInfo{}}
	res.Linearizable = string(porcupine.Ok)
	ops := map[string][]porcupine.Operation{}
	clients := map[string]int{}
	for _, w := range recs {
		if w.Kind != history.Write {
			continue
		}
		id, ok := clients[w.Holder]
		if !ok {
			id = len(clients)
			clients[w.Holder] = id
		}
		ops[w.Name] = append(ops[w.Name], porcupine.Operation{ClientId: id, Input: w.Token, Call: w.Call,
			Output: w.Accepted, Return: max(w.Return, w.Call+1), Metadata: w.Holder + " " + w.Period})
	}
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r, info := porcupine.CheckOperationsVerbose(FenceModel, ops[name], timeout)
		ev.info[name] = info
		ev.names = append(ev.names, name)
		switch r {
		case porcupine.Illegal:
			res.Linearizable = string(r)
			res.Violations = append(res.Violations, history.Violation{Check: "linearizable",
				Detail: fmt.Sprintf("%s: the fence's answers are not those of one register raised by the accepted tokens (porcupine: %s)", name, r)})
		case porcupine.Unknown:
			if res.Linearizable == string(porcupine.Ok) {
				res.Linearizable = string(r)
			}
		}
	}
	return ev
}

// Write writes one porcupine HTML timeline per name into dir
// (fence-NAME.html, NAME with '/', '\' and control characters replaced
// by '_'), beside history.WriteEvidence's files. dir must exist.
func (ev Evidence) Write(dir string) error {
	var errs []error
	for _, name := range ev.names {
		safe := strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r < ' ' {
				return '_'
			}
			return r
		}, name)
		errs = append(errs, porcupine.VisualizePath(FenceModel, ev.info[name], filepath.Join(dir, "fence-"+safe+".html")))
	}
	return errors.Join(errs...)
}

// FenceModel is the fence as porcupine sees it: a register holding the
// highest accepted token (0 at first). A write with token t is accepted
// if t is not below it, raising it to t, and refused otherwise, leaving it.
var FenceModel = porcupine.Model{
	Init: func() interface{} { return uint64(0) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		high, t, ok := state.(uint64), input.(uint64), output.(bool)
		if ok {
			return t >= high, max(high, t)
		}
		return t < high, high
	},
	DescribeOperation: func(input, output interface{}) string {
		if output.(bool) {
			return fmt.Sprintf("token %d accepted", input.(uint64))
		}
		return fmt.Sprintf("token %d refused", input.(uint64))
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("highest %d", state.(uint64)) },
	DescribeOperationMetadata: func(info interface{}) string {
		s, _ := info.(string)
		return s
	},
}
