package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// moduleVersion returns baton's module version from the build info:
// a release tag, a pseudo-version, or "(devel)" for a build from a work
// tree, with the VCS revision when the build recorded one.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" && (v == "(devel)" || v == "") {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + modified
	}
	return v
}

func runVersion(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("version", "version\n\nPrints baton's module version and the Go version it was built with.")
	if done, code := e.parseNoArgs("version", fs, args); done {
		return code
	}
	fmt.Fprintf(e.stdout, "baton %s %s %s/%s\n", moduleVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
