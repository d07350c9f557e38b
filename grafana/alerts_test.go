package grafana

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAlertRules runs promtool check rules on the shipped alert rules and
// promtool test rules on their unit tests (alerts/soakd.rules.test.yml):
// each alert fires when, and only when, its tests say.
func TestAlertRules(t *testing.T) {
	promtool := lookTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "alerts/soakd.rules.yml"},
		{"test", "rules", "alerts/soakd.rules.test.yml"},
	} {
		out, err := exec.CommandContext(t.Context(), promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
