package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/batonhq/baton/store/etcd"
	"github.com/batonhq/baton/store/postgres"
	"github.com/batonhq/baton/store/sqlite"
	"github.com/batonhq/baton/store/storedriver"
)

// version and commit are stamped by the release build
// (scripts/release.sh): go build -ldflags "-X main.version=v1.2.3
// -X main.commit=HASH". Empty in any other build: versionInfo falls back
// to the build info.
var (
	version string
	commit  string
)

// versionInfo returns baton's version and commit. The stamped ones come
// first; then the module version from the build info, which is the real
// release for 'go install github.com/batonhq/baton/cmd/baton@v1.2.3' (or
// a pseudo-version), and "(devel)" for a build from a work tree; the
// commit is the VCS revision the build recorded ("+dirty" when the tree
// had changes), or "unknown" (go install of a module records none; a
// pseudo-version names its commit).
func versionInfo() (v, c string) {
	v, c = version, commit
	bi, ok := debug.ReadBuildInfo()
	if v == "" {
		v = "(devel)"
		if ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	if c == "" && ok {
		var modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				c = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+dirty"
				}
			}
		}
		if c != "" {
			c += modified
		}
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

func runVersion(ctx context.Context, e *env, args []string) int {
	fs := e.newFlagSet("version", `version

Prints baton's version (stamped by the release build, or the module
version of 'go install ...@VERSION', or (devel)), the commit it was built
from, the Go version, OS and architecture, and the schema version of each
store that it creates and writes. It reads a store of that version or an
older one, and a writer upgrades an older store in place; a newer store
is refused. Last, the stores this binary links (kube:// only in a build
with -tags kube, such as the release's baton-kube binaries).`)
	if done, code := e.parseNoArgs("version", fs, args); done {
		return code
	}
	v, c := versionInfo()
	fmt.Fprintf(e.stdout, "baton %s %s %s/%s\ncommit %s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, c)
	fmt.Fprintf(e.stdout, "store schemas: sqlite %d, postgres %d, etcd %d (writes these; reads these and older ones)\n",
		sqlite.SchemaVersion, postgres.SchemaVersion, etcd.SchemaVersion)
	var schemes []string
	for _, s := range storedriver.Schemes() {
		schemes = append(schemes, s.Names[0])
	}
	fmt.Fprintf(e.stdout, "stores linked: %s\n", strings.Join(schemes, ", "))
	return exitOK
}

// moduleVersion returns baton's version for a log line: the version, and
// for a "(devel)" build the commit's first 12 characters too.
func moduleVersion() string {
	v, c := versionInfo()
	if v == "(devel)" && c != "unknown" {
		if len(c) > 12 {
			c = c[:12]
		}
		v += " " + c
	}
	return v
}
