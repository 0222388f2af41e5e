package linearize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/history"
)

const ms = int64(1e6)

// writes is a handover's fenced writes: a writes with token 1, b raises
// the fence to 2, a's late write with token 1 is refused.
func writes() []history.Record {
	return []history.Record{
		{Kind: history.Elected, Name: "job", Holder: "a#1", Token: 1, At: 0, Until: 300 * ms},
		{Kind: history.Write, Name: "job", Holder: "a#1", Token: 1, Period: "P1", Call: 20 * ms, Return: 25 * ms, Accepted: true},
		{Kind: history.Write, Name: "job", Holder: "b#1", Token: 2, Period: "P2", Call: 480 * ms, Return: 490 * ms, Accepted: true},
		{Kind: history.Write, Name: "job", Holder: "a#1", Token: 1, Period: "P2", Call: 500 * ms, Return: 505 * ms},
	}
}

func TestCheckOK(t *testing.T) {
	var res history.Result
	Check(&res, writes())
	if !res.OK() || res.Linearizable != "Ok" {
		t.Fatalf("a fenced handover: %q, %+v", res.Linearizable, res.Violations)
	}
}

// Token 1 accepted after token 2 is not a register raised by the accepted
// tokens: a "linearizable" violation, and a timeline in the evidence.
func TestCheckIllegal(t *testing.T) {
	recs := writes()
	recs[3].Accepted = true
	var res history.Result
	ev := Check(&res, recs)
	if res.Linearizable != "Illegal" || len(res.Violations) != 1 || res.Violations[0].Check != "linearizable" ||
		!strings.Contains(res.Violations[0].Detail, "job: ") {
		t.Fatalf("token 1 accepted after 2: %q, %+v", res.Linearizable, res.Violations)
	}
	dir := t.TempDir()
	if err := ev.Write(dir); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "fence-job.html"))
	if err != nil || !strings.Contains(string(html), "<html") {
		t.Fatalf("no porcupine timeline: %v", err)
	}
}
