package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestMergeOverrides(t *testing.T) {
	got, err := MergeOverrides([]byte("kpis:\n  confidence: 0.9\nsoak: {pause: 5s}\n"), []string{
		"kpis.cpu_increase_points=7", "sampler.interval=2s", "profiling.cpu=false", "kpis.confidence=0.8", "note=a=b",
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(got), &m); err != nil {
		t.Fatal(err)
	}
	kpis := m["kpis"].(map[string]any)
	if kpis["cpu_increase_points"] != 7 || kpis["confidence"] != 0.8 {
		t.Errorf("kpis = %v (numbers must stay numbers; --set wins over the file)", kpis)
	}
	if m["sampler"].(map[string]any)["interval"] != "2s" || m["profiling"].(map[string]any)["cpu"] != false || m["note"] != "a=b" {
		t.Errorf("overrides = %v", m)
	}
	if m["soak"].(map[string]any)["pause"] != "5s" {
		t.Errorf("the file's keys were lost: %v", m)
	}
	if s, err := MergeOverrides(nil, nil); err != nil || s != "" {
		t.Errorf("no overrides: %q, %v", s, err)
	}
	for _, bad := range [][]string{{"novalue"}, {"=1"}, {"a..b=1"}, {"a=1", "a.b=2"}, {"a=[1"}} {
		if _, err := MergeOverrides(nil, bad); err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("--set %q: err = %v", bad, err)
		}
	}
	if _, err := MergeOverrides([]byte("- a\n- b\n"), nil); err == nil {
		t.Error("a list as the overrides file was accepted")
	}
}

// TestReadFileRefusesAFIFO: a FIFO as --new is refused at once (open(2)
// blocked for ever on one, deaf to SIGTERM).
func TestReadFileRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile("--new", fifo); err == nil || !strings.Contains(err.Error(), "cannot read --new") {
		t.Errorf("ReadFile of a FIFO: %v", err)
	}
}

// TestAPIOverridesNameNoFiles: a run's overrides may not point an
// operation's data at a file the daemon can read.
func TestAPIOverridesNameNoFiles(t *testing.T) {
	err := RefuseOverrides([]byte("operations:\n  steal:\n    data:\n      v:\n        csv: /proc/self/environ\n        column: x\n"), "overrides")
	if err == nil || !strings.Contains(err.Error(), "operations.steal.data.v.csv") || !strings.Contains(err.Error(), "may not name files") {
		t.Errorf("a CSV path in the overrides: %v", err)
	}
}

// TestReadRegularRefusesFIFOsAndBigFiles: ReadRegular (target.pid_file)
// and OpenBounded (soakd drive --spec) refuse a FIFO at once, naming it,
// where os.ReadFile blocked in open(2) for ever, and a file past the bound.
func TestReadRegularRefusesFIFOsAndBigFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "target.pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(fifo, MaxPIDFileBytes); err == nil || !strings.Contains(err.Error(), fifo+" is not a regular file (a FIFO)") {
		t.Errorf("ReadRegular of a FIFO: %v, want it refused by name", err)
	}
	if r, err := OpenBounded(fifo, MaxSpecBytes); err == nil || !strings.Contains(err.Error(), fifo+" is not a regular file (a FIFO)") {
		if r != nil {
			r.Close()
		}
		t.Errorf("OpenBounded of a FIFO: %v, want it refused by name", err)
	}
	if _, err := ReadRegular("/proc/self/environ", MaxPIDFileBytes); err == nil || !strings.Contains(err.Error(), "kernel pseudo-file") {
		t.Errorf("ReadRegular of /proc/self/environ: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 4097), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRegular(big, 4096); err == nil || !strings.Contains(err.Error(), big+" is larger than 4 KiB") {
		t.Errorf("ReadRegular of 4097 bytes with a bound of 4096: %v", err)
	}
	if b, err := ReadRegular(big, 4097); err != nil || len(b) != 4097 {
		t.Errorf("ReadRegular at its bound: %d bytes, %v", len(b), err)
	}
}
