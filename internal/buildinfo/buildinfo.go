// Package buildinfo names the soakd build running, for reports and --version.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version names the soakd build running: the module version the go command
// stamped from version control (a tag, or a pseudo-version holding the
// commit's time and hash), with "+dirty" when the working tree had changes,
// or "devel" for a build without version control information (go build
// -buildvcs=false, a source tree without .git). Reports carry it so that a
// figure can always be traced to the code that measured it.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

// versionOf is Version's decision on given build information.
func versionOf(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		if rev == "" {
			return "devel"
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v = "devel-" + rev
	}
	if modified == "true" && !strings.HasSuffix(v, "+dirty") {
		v += "+dirty"
	}
	return v
}

// Commit is the version control revision the build was made from (the
// full hash), or "unknown" for a build without version control
// information. soakd_build_info carries it beside Version.
func Commit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return commitOf(bi)
}

// commitOf is Commit's decision on given build information.
func commitOf(bi *debug.BuildInfo) string {
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			return s.Value
		}
	}
	return "unknown"
}
