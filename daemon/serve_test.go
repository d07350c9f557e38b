package daemon

import (
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/api"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/report"
)

// TestStartReplyNamesProfileAndRunning checks the control API's start
// reply and the run list while a run is in progress: the profile is named
// (the default profile when the request names none) and the verdict is
// running, not aborted nor empty. The profiles' compared phases are broken
// so that RunSuite stops at its plan, before starting a target or writing
// a report: what the API shows comes from the history's new-run entry, as
// it does in the moments after a real start.
func TestStartReplyNamesProfileAndRunning(t *testing.T) {
	cfg, err := LoadConfig(defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	for name, p := range cfg.Profiles {
		p.Compare.REST = "no-such-phase"
		cfg.Profiles[name] = p
	}
	store, err := history.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context()}

	for _, tc := range []struct{ asked, want string }{{"", cfg.DefaultProfile}, {"seed", "seed"}} {
		got, err := d.Start(t.Context(), api.StartRequest{Profile: tc.asked})
		if err != nil {
			t.Fatalf("Start(%q): %v", tc.asked, err)
		}
		if got.Profile != tc.want || got.Status != report.StatusRunning || got.Verdict != report.VerdictRunning {
			t.Errorf("Start(%q) replied %+v, want profile %q, status and verdict running", tc.asked, got, tc.want)
		}
		list, err := d.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range list {
			if r.ID == got.ID {
				found = true
				if r.Profile != tc.want || r.Verdict == report.VerdictAborted || r.Verdict == "" {
					t.Errorf("List shows the new run as %+v, want profile %q and a verdict other than aborted or empty", r, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("List lacks the new run %s", got.ID)
		}
		d.runs.Wait()
	}
}
