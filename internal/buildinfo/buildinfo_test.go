package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	rev := "bb0108c7c1ced719f4b822e98817fbe7bdaa7714"
	for _, tc := range []struct {
		name, main string
		settings   map[string]string
		want       string
	}{
		{"no vcs", "(devel)", nil, "devel"},
		{"tagged", "v1.2.3", map[string]string{"vcs.revision": rev, "vcs.modified": "false"}, "v1.2.3"},
		{"pseudo", "v0.0.0-20261201144540-bb0108c7c1ce", map[string]string{"vcs.revision": rev}, "v0.0.0-20261201144540-bb0108c7c1ce"},
		{"pseudo dirty already marked", "v0.0.0-20261201144540-bb0108c7c1ce+dirty", map[string]string{"vcs.revision": rev, "vcs.modified": "true"}, "v0.0.0-20261201144540-bb0108c7c1ce+dirty"},
		{"devel with revision", "(devel)", map[string]string{"vcs.revision": rev, "vcs.modified": "true"}, "devel-bb0108c7c1ce+dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}}
			for k, v := range tc.settings {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
			}
			if got := versionOf(bi); got != tc.want {
				t.Errorf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCommitOf(t *testing.T) {
	rev := "bb0108c7c1ced719f4b822e98817fbe7bdaa7714"
	with := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: rev}}}
	if got := commitOf(with); got != rev {
		t.Errorf("commitOf = %q, want %q", got, rev)
	}
	if got := commitOf(&debug.BuildInfo{}); got != "unknown" {
		t.Errorf("commitOf without vcs = %q, want unknown", got)
	}
}
