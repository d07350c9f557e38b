package exitcode

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// codeConstants parses exitcode.go for every constant of type Code, so the
// tests below see a code added later without being told.
func codeConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "exitcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || fmt.Sprint(vs.Type) != "Code" {
			return true
		}
		for i, name := range vs.Names {
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok {
				t.Fatalf("%s: not a literal", name.Name)
			}
			var v int
			fmt.Sscan(lit.Value, &v)
			codes[name.Name] = v
		}
		return true
	})
	if len(codes) < 10 {
		t.Fatalf("found %d Code constants in exitcode.go, want at least 10", len(codes))
	}
	return codes
}

// TestHelpCoversEveryCode: `soakd --help` lists every exit code, and
// docs/operations.md's table has a row for each.
func TestHelpCoversEveryCode(t *testing.T) {
	help := Help()
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range codeConstants(t) {
		if !strings.Contains(help, fmt.Sprintf("  %d  ", v)) {
			t.Errorf("--help has no line for %s (%d):\n%s", name, v, help)
		}
		if !strings.Contains(string(ops), fmt.Sprintf("\n| %d | ", v)) {
			t.Errorf("docs/operations.md's exit code table has no row for %s (%d)", name, v)
		}
	}
}
