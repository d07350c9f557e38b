package e2e

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// ciJob is one CI job of docs/ci.md as the test reads it: its shell
// commands in order and the files it hands on (artefacts, the comment).
type ciJob struct {
	name     string
	commands []string
	files    []string
}

// ciDocJobs reads the YAML blocks of docs/ci.md: a GitHub Actions list of
// steps (each step's run:, and the path a step's with: hands on) and GitLab
// jobs (script:, artifacts: paths and junit reports).
func ciDocJobs(t *testing.T, doc string) []ciJob {
	t.Helper()
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	var jobs []ciJob
	for _, b := range blocks {
		var node any
		if err := yaml.Unmarshal([]byte(b[1]), &node); err != nil {
			t.Fatalf("docs/ci.md: a yaml block does not parse: %v\n%s", err, b[1])
		}
		switch v := node.(type) {
		case []any: // GitHub Actions steps
			job := ciJob{name: "GitHub Actions"}
			for _, s := range v {
				step, _ := s.(map[string]any)
				if run, ok := step["run"].(string); ok {
					job.commands = append(job.commands, run)
				}
				if with, ok := step["with"].(map[string]any); ok {
					if p, ok := with["path"].(string); ok {
						job.files = append(job.files, p)
					}
				}
			}
			jobs = append(jobs, job)
		case map[string]any: // GitLab CI jobs
			for name, j := range v {
				jm, _ := j.(map[string]any)
				job := ciJob{name: "GitLab CI " + name}
				script, _ := jm["script"].([]any)
				for _, c := range script {
					job.commands = append(job.commands, c.(string))
				}
				art, _ := jm["artifacts"].(map[string]any)
				paths, _ := art["paths"].([]any)
				for _, p := range paths {
					job.files = append(job.files, p.(string))
				}
				reports, _ := art["reports"].(map[string]any)
				junit, _ := reports["junit"].([]any)
				for _, p := range junit {
					job.files = append(job.files, p.(string))
				}
				jobs = append(jobs, job)
			}
		default:
			t.Fatalf("docs/ci.md: a yaml block is neither a list of steps nor a map of jobs:\n%s", b[1])
		}
	}
	return jobs
}

// TestCIDocJobs runs the jobs of docs/ci.md as written, against the Go
// example server of docs/own-server.md: soak.yaml is
// examples/gobooks-command.yaml with the profiles the jobs name (gate and
// quick, each gobooks-small: two 3 s rounds), old.yaml and new.yaml its
// side files, the new build allocating 64 KiB more per GraphQL request.
// Every soakd command of a job runs in a shell in the job's directory with
// soakd on PATH (a command that builds the team's own server is the one
// step not run: the test built the example server). Each must exit as its
// job expects: check 0; the A/B session 1, naming the regression in the
// Markdown it writes for the pull request; a run and its comparison with
// the baseline 0, 1 or 4. Every file a job hands on (the PR comment, the
// artefacts, the JUnit reports) must exist, and the JUnit files parse.
func TestCIDocJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	doc, err := os.ReadFile("docs/ci.md")
	if err != nil {
		t.Fatal(err)
	}
	jobs := ciDocJobs(t, string(doc))
	if len(jobs) < 2 {
		t.Fatalf("docs/ci.md has %d jobs, want a GitHub Actions one and a GitLab CI one", len(jobs))
	}
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "soakd")); err != nil {
		t.Fatal(err)
	}
	for _, job := range jobs {
		t.Run(job.name, func(t *testing.T) {
			dir := t.TempDir()
			base, oldPort, newPort := freePort(t), freePort(t), freePort(t)
			for oldPort == base {
				oldPort = freePort(t)
			}
			for newPort == base || newPort == oldPort {
				newPort = freePort(t)
			}
			soak := exampleConfig(t, "gobooks-command.yaml", base, goBooksBinary, server,
				"\nprofiles:\n", "\nprofiles:\n  gate: {extends: gobooks-small}\n  quick: {extends: gobooks-small}\n") +
				"\ndata_dir: " + filepath.Join(dir, "soakd-data") + "\n"
			for name, body := range map[string]string{
				"soak.yaml": soak,
				"old.yaml":  exampleConfig(t, "gobooks-ab-old.yaml", base, "4001", strconv.Itoa(oldPort), goBooksBinary, server),
				"new.yaml": exampleConfig(t, "gobooks-ab-new.yaml", base, "4002", strconv.Itoa(newPort), goBooksBinary, server,
					`-alloc-per-request, "65536"`, `-alloc-per-request, "`+strconv.Itoa(goBooksPlantedAlloc)+`"`),
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sh := func(cmd string) (string, int) {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
				defer cancel()
				c := exec.CommandContext(ctx, "bash", "-e", "-c", cmd)
				c.Dir = dir
				c.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
				var out bytes.Buffer
				c.Stdout, c.Stderr = &out, &out
				err := c.Run()
				if ee, ok := errors.AsType[*exec.ExitError](err); ok {
					return out.String(), ee.ExitCode()
				} else if err != nil {
					t.Fatalf("%s: %v", cmd, err)
				}
				return out.String(), 0
			}
			ran := 0
			for _, cmd := range job.commands {
				if !strings.HasPrefix(cmd, "soakd ") {
					t.Logf("not run (it builds your own server; the test built the example's): %s", cmd)
					continue
				}
				want := map[int]bool{0: true}
				switch {
				case strings.HasPrefix(cmd, "soakd ab "):
					want = map[int]bool{1: true}
				case strings.HasPrefix(cmd, "soakd compare ") && strings.Contains(cmd, "baseline/"):
					// The baseline a pipeline kept: a run of the same build
					// before this one.
					if out, code := sh("soakd run --config soak.yaml --profile quick --out baseline"); code > 1 && code != 4 {
						t.Fatalf("the baseline run exited %d:\n%s", code, out)
					}
					want = map[int]bool{0: true, 1: true, 4: true}
				case strings.HasPrefix(cmd, "soakd run "):
					want = map[int]bool{0: true, 1: true, 4: true}
				}
				out, code := sh(cmd)
				ran++
				if !want[code] {
					t.Fatalf("%s: exit %d, want one of %v:\n%.6000s", cmd, code, want, out)
				}
				t.Logf("%s: exit %d", cmd, code)
			}
			if ran == 0 {
				t.Fatalf("%s: no soakd command", job.name)
			}
			for _, f := range job.files {
				p := filepath.Join(dir, f)
				st, err := os.Stat(p)
				if err != nil {
					t.Errorf("%s hands on %s, which the job did not write: %v", job.name, f, err)
					continue
				}
				switch {
				case st.IsDir():
					if es, _ := os.ReadDir(p); len(es) == 0 {
						t.Errorf("%s hands on %s, which is empty", job.name, f)
					}
				case strings.HasSuffix(f, ".xml"):
					b, _ := os.ReadFile(p)
					var suites struct {
						XMLName xml.Name
						Cases   []struct {
							Name string `xml:"name,attr"`
						} `xml:"testsuite>testcase"`
					}
					if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Cases) == 0 {
						t.Errorf("%s: %s is no JUnit report with test cases (%v):\n%.2000s", job.name, f, err, b)
					}
				case strings.HasSuffix(f, ".md"):
					b, _ := os.ReadFile(p)
					if !strings.Contains(string(b), "alloc") || !strings.Contains(strings.ToUpper(string(b)), "FAIL") {
						t.Errorf("%s: %s does not give the failed allocation row for the pull request:\n%.3000s", job.name, f, b)
					}
				}
			}
		})
	}
}
