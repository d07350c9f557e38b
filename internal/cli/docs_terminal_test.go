package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/progress"
	"github.com/soakd/soakd/internal/report"
)

// TestDocsTerminalView: docs/commands.md describes the terminal as the
// code draws it: the heartbeat interval, the summary's width, the name
// column, NO_COLOR, and the finished-phase line as DoneLine writes it.
func TestDocsTerminalView(t *testing.T) {
	doc := string(mustRead(t, "docs/commands.md"))
	_, section, ok := strings.Cut(doc, "### What the terminal shows")
	if !ok {
		t.Fatal("docs/commands.md has no section What the terminal shows")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	flat := strings.Join(strings.Fields(section), " ")
	done := progress.DoneLine(progress.Done{Name: "graphql-load", Requests: 3000, RPS: 1678.2, P99Ms: 2.44, Elapsed: 2 * time.Second}, 100)
	for _, want := range []string{
		fmt.Sprintf("at most every %d s", progress.DefaultHeartbeat/time.Second),
		fmt.Sprintf("fits %d columns", report.SummaryWidth),
		fmt.Sprintf("longer than %d columns", progress.NameWidth),
		"`NO_COLOR`",
		"`" + strings.Join(strings.Fields(done), " ") + "`",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the section lacks %q", want)
		}
	}
}
