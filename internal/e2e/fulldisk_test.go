package e2e

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/api"
)

// smallDisk mounts a tmpfs of size bytes on a new directory and returns it,
// unmounted at cleanup; it skips the test where mounting is not allowed
// (not root, or a container without CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes into dir until the file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0}, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// TestServeFullDisk (issue 10 item 7) runs soakd serve with its data_dir on
// a real, small file system and fills it: the run in progress ends as
// aborted (not stuck "running"), a stop is not refused forever, and a
// daemon restarted on the full disk comes up with read-only history, says
// so, and refuses new runs with the reason.
func TestServeFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	disk := smallDisk(t, "4m")
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "data_dir: "+filepath.Join(dir, "data"), "data_dir: "+filepath.Join(disk, "data"), 1)
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, bin, cfg)
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()
	// Phases bounded by time, not by a request count that a fast machine
	// (or a loaded one's scheduling) can finish before the disk fills: the
	// first phase is still running when the disk fills, and the partial
	// report written after it fails.
	long := "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n      - name: rest-control\n        arm: rest\n        duration: 4s\n        users: [{operation: rest-get, users: 2, iterations: 1000000}]\n      - name: graphql-load\n        arm: graphql\n        duration: 4s\n        users: [{operation: graphql-query, users: 2, iterations: 1000000}]\n"
	run, err := cl.Start(ctx, api.StartRequest{Profile: "tiny", Overrides: long})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	fill(t, disk)
	r := waitStatus(t, cl, run.ID, "aborted", "complete")
	if r.Status != "aborted" || r.Verdict != "aborted" || r.Reason == "" {
		t.Errorf("a run whose writes failed: %+v, want aborted with a reason", r)
	}
	// Nothing is left running: stop has nothing to stop.
	if out, stderr, code := runSoakd(t, bin, "stop", "--api", d.api); code != 2 || !strings.Contains(stderr, "no run is in progress") {
		t.Errorf("soakd stop after the failed run: exit %d\n%s%s", code, out, stderr)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d\n%s", code, d.stderr.String())
	}

	// A restart on the full disk: up, read-only, and it says why.
	d2 := startServe(t, bin, cfg)
	out, stderr, code := runSoakd(t, bin, "runs", "--api", d2.api)
	if code != 0 || !strings.Contains(out, "history is read-only, no run can start") || !strings.Contains(out, run.ID) {
		t.Errorf("soakd runs on a read-only history: exit %d\n%s%s", code, out, stderr)
	}
	_, err = (&api.Client{BaseURL: d2.api}).Start(ctx, api.StartRequest{Profile: "tiny"})
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Errorf("start on a read-only history: %v, want 503", err)
	}
	if code := d2.stop(t); code != 0 {
		t.Errorf("soakd serve (read-only) on SIGTERM: exit %d\n%s", code, d2.stderr.String())
	}
	// Read once the daemon has exited (its stderr is written until then).
	if !strings.Contains(d2.stderr.String(), "read-only") {
		t.Errorf("the daemon's log does not say the history is read-only:\n%s", d2.stderr.String())
	}
}
