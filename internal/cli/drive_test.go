package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/workloads"
)

// TestDriveShard: soakd drive --shard 1/3 offers shard 1's share of the
// spec's users (overriding the spec's shard) and says so in its result;
// a bad --shard is refused with exit 2, naming the flag and what is wrong,
// before anything is sent.
func TestDriveShard(t *testing.T) {
	defaults := mustRead(t, "config.yaml")
	cfg, err := (&cli{defaults: defaults}).loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := config.PhaseSpec(cfg, "", "rest-control")
	if err != nil {
		t.Fatal(err)
	}
	var p workloads.Phase
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	// 7 users of 2 requests against a port nothing listens on: shard 1 of
	// 3 runs 2 of them, whose 4 requests are refused at once.
	p.Groups = []workloads.UserGroup{{Operation: "rest-get", Users: 7, Iterations: 2}}
	p.Think, p.RampUp = workloads.Think{}, 0
	p.Shard = workloads.Shard{Index: 2, Count: 5} // overridden by --shard
	spec := filepath.Join(t.TempDir(), "spec.json")
	if b, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"drive", "--target", "http://127.0.0.1:1", "--spec", spec}

	var stdout, stderr bytes.Buffer
	if code := Run(defaults, append(args, "--shard", "1/3"), &stdout, &stderr); code != exitcode.Pass {
		t.Fatalf("drive --shard 1/3: exit %d\n%s", code, stderr.String())
	}
	var res *workloads.Result
	if err := workloads.ReadMessages(context.Background(), &stdout, func(m workloads.Message) error {
		if m.Type == workloads.MessageResult {
			res = m.Result
		}
		return nil
	}); err != nil || res == nil {
		t.Fatalf("no result (%v):\n%s", err, stdout.String())
	}
	if res.Shard != (workloads.Shard{Index: 1, Count: 3}) || res.Operations[0].Users != 2 || res.Requests != 4 {
		t.Errorf("result: shard %+v, %d users, %d requests; want shard 1/3, 2 users, 4 requests", res.Shard, res.Operations[0].Users, res.Requests)
	}

	for flag, want := range map[string]string{
		"3/3":  "--shard: \"3/3\": index: the shard index must be between 0 and 2",
		"0/0":  "--shard: \"0/0\": the number of shards must be between 1 and 1000",
		"1":    "--shard: want i/N",
		"x/3":  "--shard: the shard index \"x\" of \"x/3\" is not a whole number",
		"1/1e": "is not a whole number",
	} {
		stdout.Reset()
		stderr.Reset()
		code := Run(defaults, append(args, "--shard", flag), &stdout, &stderr)
		if code != exitcode.Usage || !strings.Contains(stderr.String(), want) || stdout.Len() != 0 {
			t.Errorf("--shard %s: exit %d, stdout %q, stderr %q; want exit 2 saying %q", flag, code, stdout.String(), stderr.String(), want)
		}
	}
}
