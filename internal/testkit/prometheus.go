package testkit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartPrometheus runs a real Prometheus (bin, from LookTool) on loopback
// scraping target every second as job, with ruleFile (a rules file, "" for
// none) evaluated every second, into a temporary directory, and returns its
// base URL once ready. It is stopped (SIGINT, then killed) when the test
// ends; its log is printed when the test failed.
func StartPrometheus(t *testing.T, bin, job, target, ruleFile string) string {
	t.Helper()
	return StartPrometheusJobs(t, bin, []ScrapeJob{{Job: job, Target: target}}, ruleFile)
}

// ScrapeJob is one scrape job of StartPrometheusJobs: a job name and the
// host:port whose /metrics it scrapes.
type ScrapeJob struct{ Job, Target string }

// StartPrometheusJobs is StartPrometheus with several scrape jobs, each
// scraped every second: a target's and a daemon's series side by side.
func StartPrometheusJobs(t *testing.T, bin string, jobs []ScrapeJob, ruleFile string) string {
	t.Helper()
	dir := t.TempDir()
	rules := ""
	if ruleFile != "" {
		abs, err := filepath.Abs(ruleFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("the rules file: %v", err) // Prometheus would start without it
		}
		rules = fmt.Sprintf("rule_files: [%q]\n", abs)
	}
	var scrape strings.Builder
	for _, j := range jobs {
		fmt.Fprintf(&scrape, "  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", j.Job, j.Target)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
%sscrape_configs:
%s`, rules, scrape.String())
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second // then killed
	var log SyncBuilder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("cannot start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})

	base := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited: %v\n%s", err, log.String())
		default:
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60s\n%s", log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SyncBuilder is a strings.Builder safe for concurrent writes: a
// process's stdout and stderr copied into one log.
type SyncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *SyncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
