package main

import (
	"context"
	"fmt"

	"github.com/batonhq/baton/internal/bound"
	"github.com/batonhq/baton/internal/lab/model"
)

func calcSubcommands() []command {
	return []command{
		{"quorum", "majority quorum of a membership; with votes and terms, whether a candidate is elected", calcQuorum},
		{"activation", "safe activation time of a new leader (lease + 2 x clock uncertainty) and the wait left", calcActivation},
	}
}

func runCalc(ctx context.Context, e *env, args []string) int {
	return dispatch(ctx, e, "calc", "the glossary's election arithmetic.", calcSubcommands(), args)
}

func calcQuorum(_ context.Context, e *env, args []string) int {
	const name = "calc quorum"
	fs := e.newFlagSet(name, name+" --members N [--votes V --term T --last-term L]\n\n"+
		"Prints the majority quorum floor(N/2)+1 of N voting members. With --votes, --term and\n"+
		"--last-term (all three, no defaults) it also decides the election: elected only when\n"+
		"the votes reach the quorum and the term is greater than the last accepted term.\n"+
		"Exit status: 0 elected (or quorum only), 1 not elected, 2 bad flags.")
	members := fs.Int("members", 0, "voting members in the membership view, 1 or more (required)")
	votes := fs.Int("votes", 0, "valid votes the candidate received, 0 to --members")
	term := fs.Int64("term", 0, "term the candidate asks for, 0 or more")
	lastTerm := fs.Int64("last-term", 0, "highest term accepted so far, 0 or more")
	asJSON := fs.Bool("json", false, "print JSON")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	set := flagsSet(fs)
	if err := required(set, "want the number of voting members, 1 or more", "members"); err != nil {
		return e.fail(name, err)
	}
	if !set["votes"] && !set["term"] && !set["last-term"] {
		q, err := model.Quorum(*members)
		if err != nil {
			return e.fail(name, asUsage(err))
		}
		if *asJSON {
			return e.writeJSON(name, struct {
				Members int `json:"members"`
				Quorum  int `json:"quorum"`
			}{*members, q}, exitOK)
		}
		fmt.Fprintf(e.stdout, "members  %d\nquorum   %d (majority: floor(%d/2)+1)\n", *members, q, *members)
		return exitOK
	}
	if err := required(set, "a verdict needs --votes, --term and --last-term together", "votes", "term", "last-term"); err != nil {
		return e.fail(name, err)
	}
	v, err := model.Elect(model.Ballot{Members: *members, Votes: *votes, Term: *term, LastTerm: *lastTerm})
	if err != nil {
		return e.fail(name, asUsage(err))
	}
	verdict, code := "not elected", exitFailure
	if v.Elected {
		verdict, code = "elected", exitOK
	}
	if *asJSON {
		return e.writeJSON(name, struct {
			Members  int    `json:"members"`
			Quorum   int    `json:"quorum"`
			Votes    int    `json:"votes"`
			Term     int64  `json:"term"`
			LastTerm int64  `json:"last_term"`
			Elected  bool   `json:"elected"`
			Reason   string `json:"reason"`
		}{*members, v.Quorum, *votes, *term, *lastTerm, v.Elected, v.Reason}, code)
	}
	fmt.Fprintf(e.stdout, "members  %d\nquorum   %d (majority: floor(%d/2)+1)\nvotes    %d\nterm     %d (last accepted %d)\nverdict  %s: %s\n",
		*members, v.Quorum, *members, *votes, *term, *lastTerm, verdict, v.Reason)
	return code
}

func calcActivation(_ context.Context, e *env, args []string) int {
	const name = "calc activation"
	fs := e.newFlagSet(name, name+" --lease D --epsilon D [--ready D]\n\n"+
		"Prints T_safe = lease + 2 x epsilon, the earliest a new leader may act when the old\n"+
		"leader's lease is D and clocks are uncertain by epsilon, and the wait (or fencing)\n"+
		"margin left when election completed after --ready: T_safe - ready, 0s if ready is later.\n"+
		"Durations are Go durations (8s, 150ms, 1m30s), none negative. --lease and --epsilon are\n"+
		"required: a silent zero uncertainty would make the answer look safer than it is.")
	lease := fs.Duration("lease", 0, "lease of the old leader (required)")
	epsilon := fs.Duration("epsilon", 0, "clock uncertainty between nodes (required)")
	ready := fs.Duration("ready", 0, "time from the old leader's last renewal to the end of the election")
	asJSON := fs.Bool("json", false, "print JSON (durations in seconds)")
	if done, code := e.parseNoArgs(name, fs, args); done {
		return code
	}
	set := flagsSet(fs)
	if err := required(set, "want a duration such as 8s or 150ms, 0s or more", "lease", "epsilon"); err != nil {
		return e.fail(name, err)
	}
	safe, wait, err := model.Activation(*lease, *epsilon, *ready)
	if err != nil {
		return e.fail(name, asUsage(err))
	}
	if *asJSON {
		return e.writeJSON(name, struct {
			LeaseSeconds   float64 `json:"lease_seconds"`
			EpsilonSeconds float64 `json:"epsilon_seconds"`
			ReadySeconds   float64 `json:"ready_seconds"`
			TSafeSeconds   float64 `json:"t_safe_seconds"`
			WaitSeconds    float64 `json:"wait_seconds"`
		}{bound.Seconds(*lease), bound.Seconds(*epsilon), bound.Seconds(*ready), bound.Seconds(safe), bound.Seconds(wait)}, exitOK)
	}
	fmt.Fprintf(e.stdout, "T_safe  %-8s (lease %s + 2 x epsilon %s)\n", safe, *lease, *epsilon)
	if wait > 0 {
		fmt.Fprintf(e.stdout, "wait    %-8s (T_safe %s - ready %s)\n", wait, safe, *ready)
	} else {
		fmt.Fprintf(e.stdout, "wait    %-8s (ready %s is at or after T_safe %s)\n", wait, *ready, safe)
	}
	return exitOK
}
