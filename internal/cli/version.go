package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with
// -ldflags "-X novaos.dev/novaos/internal/cli.version=v1.2.3"; otherwise
// the module version and VCS revision from the build info are used.
var version = ""

func runVersion(_ context.Context, args []string, e *env) int {
	fs := newFlags("version", "version", e)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	fmt.Fprintf(e.stdout, "novaos %s %s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}

func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" && v == "(devel)" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + modified
	}
	return v
}
