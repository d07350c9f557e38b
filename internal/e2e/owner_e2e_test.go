package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTheMeasuredProcessIsTheServer: the process soakd samples must be the
// server that answers the GraphQL URL (issue 22, part 1). Before, each case
// below ran to a verdict about the wrong process: a sleep beside the server
// read CPU 0.00 % vs 0.00 %, pass; a forking argv measured its shell (one
// thread, 1.7 MiB); a leftover server on the port took the load while the
// new one was measured; and kill -9 of soakd left a wrapper-started server
// running under PID 1, still answering.
func TestTheMeasuredProcessIsTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)

	t.Run("attach to a process beside the server", func(t *testing.T) {
		srv := newExternalServer(t)
		serve := srv.start(t, bin)
		sleep := exec.Command("sleep", "120")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
		rep, out, code := runConfig(t, bin, tinyConfig+srv.targetSection("attach", fmt.Sprintf("  pid: %d\n", sleep.Process.Pid)))
		msg, _ := rep["error"].(string)
		if code != 2 || !strings.Contains(msg, fmt.Sprintf("target.pid %d (sleep) is not the server listening on 127.0.0.1:%d", sleep.Process.Pid, srv.port)) ||
			!strings.Contains(msg, fmt.Sprintf("held by pid %d", serve.Process.Pid)) {
			t.Fatalf("exit %d, error %q; want 2, naming the sleep and the server's pid %d", code, msg, serve.Process.Pid)
		}
		if len(rows(rep, "phases")) != 0 {
			t.Errorf("phases ran against the wrong process (%s)", out)
		}
	})

	t.Run("the port is already served", func(t *testing.T) {
		srv := newExternalServer(t)
		leftover := srv.start(t, bin)
		rep, _, code := runConfig(t, bin, tinyConfig+srv.commandSection(bin))
		msg, _ := rep["error"].(string)
		if code != 2 || !strings.Contains(msg, fmt.Sprintf("127.0.0.1:%d is already served by pid %d", srv.port, leftover.Process.Pid)) {
			t.Fatalf("exit %d, error %q; want 2, naming the leftover's pid %d", code, msg, leftover.Process.Pid)
		}
		stillServing(t, srv.port, "the leftover server")
	})

	t.Run("a forking argv", func(t *testing.T) {
		srv := newExternalServer(t)
		// sh does not exec the server: it waits for it, then echoes.
		section := strings.Replace(srv.commandSection(bin), "  argv: [", `  argv: [sh, -c, '"$0" "$@"; echo done', `, 1)
		_, out, code := runConfig(t, bin, tinyConfig+section)
		rep, raw := readExternalReport(t, out)
		if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
			t.Fatalf("exit %d, status %q (error %q); want a complete run\n%.3000s", code, rep.Status, rep.Error, raw)
		}
		var full struct {
			Target struct {
				PID           int    `json:"pid"`
				GivenPID      int    `json:"given_pid"`
				ListenerCheck string `json:"listener_check"`
				Processes     []struct {
					PID           int    `json:"pid"`
					PPID          int    `json:"ppid"`
					Comm          string `json:"comm"`
					HoldsListener bool   `json:"holds_listener"`
					Sampled       bool   `json:"sampled"`
				} `json:"processes"`
			} `json:"target"`
		}
		if err := json.Unmarshal(raw, &full); err != nil {
			t.Fatal(err)
		}
		tg := full.Target
		if tg.GivenPID == 0 || tg.PID == tg.GivenPID || len(tg.Processes) != 2 ||
			tg.Processes[0].PID != tg.GivenPID || tg.Processes[0].Comm != "sh" || tg.Processes[0].Sampled ||
			tg.Processes[1].PID != tg.PID || tg.Processes[1].PPID != tg.GivenPID || !tg.Processes[1].HoldsListener || !tg.Processes[1].Sampled {
			t.Fatalf("target %+v: want the shell given, the server under it sampled", tg)
		}
		if !strings.Contains(tg.ListenerCheck, "started pid "+strconv.Itoa(tg.PID)) {
			t.Errorf("listener_check %q does not say the shell started the sampled server", tg.ListenerCheck)
		}
		for _, p := range rep.Phases[:2] {
			r := p.Resources
			if r == nil || !r.CPUKnown || p.ResourceFigures == nil || p.ResourceFigures.CPUSeconds.Value < 0.05 {
				t.Errorf("%s: resources %+v; want the server's CPU measured (the shell alone reads 0)", p.Name, r)
			}
		}
		for _, n := range rep.Notes {
			if strings.Contains(n, "CPU cross-check") {
				t.Errorf("the server's own process_cpu_seconds_total disagrees with the OS: %s", n)
			}
		}
	})

	t.Run("soakd killed with a wrapper-started target", func(t *testing.T) {
		srv := newExternalServer(t)
		cmd, _ := startWrappedRun(t, bin, srv, filepath.Join(t.TempDir(), "data"))
		stillServing(t, srv.port, "the target")
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		// The guard ends the tree within target.stop_grace (10 s) of soakd's death.
		awaitNoServer(t, srv)
	})

	t.Run("soakd and its guard killed at once", func(t *testing.T) {
		// pkill -9 soakd kills the guard too (it is soakd); the server,
		// in the guard's process group, runs on under PID 1. The next soakd
		// on the same data_dir ends it from the guard's record.
		srv := newExternalServer(t)
		data := filepath.Join(t.TempDir(), "data")
		cmd, guardPID := startWrappedRun(t, bin, srv, data)
		records, _ := filepath.Glob(filepath.Join(data, "targets", "*.json"))
		if len(records) != 1 {
			t.Fatalf("guard records %v, want one", records)
		}
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		_ = syscall.Kill(guardPID, syscall.SIGKILL)
		_ = cmd.Wait()
		time.Sleep(500 * time.Millisecond) // what was going to die has died
		stillServing(t, srv.port, "the orphaned server")

		// The next run on the same data_dir: its target never gets ready
		// (a wrong ready_url), so it ends quickly, but only after the sweep
		// and the check that the port is free.
		next := strings.Replace(tinyConfig+srv.commandSection(bin), "ready_timeout: 30s", "ready_timeout: 1s", 1)
		next = strings.Replace(next, "ready_url: "+srv.url("/healthz"), "ready_url: "+srv.url("/not-ready"), 1)
		rep, _, code := runConfig(t, bin, next+"\ndata_dir: "+data+"\n")
		if code != 3 {
			t.Errorf("the next run exited %d (%v), want 3 (aborted: never ready), not 2 (port served by the orphan)", code, rep["error"])
		}
		awaitNoServer(t, srv)
		if records, _ := filepath.Glob(filepath.Join(data, "targets", "*.json")); len(records) != 0 {
			t.Errorf("records left: %v", records)
		}
	})
}

// startWrappedRun starts `soakd run` of a long profile on srv's server,
// started through a shell that does not exec it (data_dir data), waits
// until the target command is ready, and returns the run and the pid of
// the target's guard; the rest of the log is drained.
func startWrappedRun(t *testing.T, bin string, srv externalServer, data string) (*exec.Cmd, int) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "long.yaml")
	long := strings.Replace(tinyConfig, "graphql-mutation, users: 5, iterations: 300", "graphql-mutation, users: 5, iterations: 20000", 1)
	// The server's output goes to a file, not to soakd's log pipe: with
	// soakd killed, its next log line would end it by SIGPIPE (a Go
	// program writing to a broken stdout or stderr exits), which would
	// decide by timing whether an orphan is left for the next run to end.
	serverLog := filepath.Join(dir, "server.log")
	section := strings.Replace(srv.commandSection(bin), "  argv: [", `  argv: [sh, -c, '"$0" "$@" >>`+serverLog+` 2>&1; echo done', `, 1)
	if err := os.WriteFile(cfgPath, []byte(long+section+"\ndata_dir: "+data+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgPath, "--out", filepath.Join(dir, "run"), "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	guardPID, ready := 0, false
	for !ready && sc.Scan() {
		var m struct {
			Msg string `json:"msg"`
			PID int    `json:"pid"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			switch m.Msg {
			case "target command started":
				guardPID = m.PID
			case "target command ready":
				ready = true
			}
		}
	}
	if guardPID == 0 || !ready {
		t.Fatal("the target command never got ready")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, guardPID
}

// awaitNoServer waits, up to 30 s, until nothing answers srv's port and
// no process runs with srv's config.
func awaitNoServer(t *testing.T, srv externalServer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := http.Get(srv.url("/healthz"))
		left := processesWith(t, srv.config)
		if err != nil && len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s on: serving %v, processes left %v", err == nil, left)
		}
	}
}

// processesWith lists the processes whose command line holds s.
// processesWith lists the processes whose command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
