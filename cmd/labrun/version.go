package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildCommit is set by the Makefile (-ldflags -X main.buildCommit=...) for builds that have no
// VCS stamp, such as those with -buildvcs=false (CI, git worktrees).
var buildCommit string

// versionLine says which labrun this is: the Go module and its version, the commit it was built
// from (with -dirty when the tree had changes), and the Go toolchain. Builds without VCS stamping
// (go build -buildvcs=false, go run) say so instead of inventing a commit.
func versionLine() string {
	module, version, commit, dirty := "github.com/kernel-labs/kernellabs", "(unknown)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	switch {
	case commit == "" && buildCommit != "":
		commit = buildCommit
	case commit == "":
		commit = "unknown commit (built without VCS stamping)"
	case dirty:
		commit += "-dirty"
	}
	return fmt.Sprintf("labrun %s %s, commit %s, %s", module, version, commit, runtime.Version())
}

func cmdVersion(stdout io.Writer) int {
	fmt.Fprintln(stdout, versionLine())
	return exitOK
}
