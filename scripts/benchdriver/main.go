// Command benchdriver measures the load driver's CPU per request against
// wrk's (issue 12): `make bench-driver` (scripts/bench-driver.sh) runs it.
//
// It starts soakd's built-in target (builtin.StartTarget, the embedded
// config.yaml read from the working directory) in a child process pinned to
// one CPU, then for each operation runs alternating rounds of `soakd drive`
// and wrk, each pinned to another CPU, with the same connections, no think
// time and the same duration, sending the same random requests. A tool's CPU
// is the child's user+system time from wait4's rusage; CPU per request is
// that over the requests it completed (the driver's result `requests`, wrk's
// "N requests in"). It prints a markdown table and exits non-zero when a run
// failed or reported errors. Every request goes to loopback.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/workloads"
)

// The GraphQL body the driver sends for the Donut query (workloads/request.go),
// before and after the id.
const (
	gqlBodyStart = `{"query":"query Donut($id: ID!) { donut(id: $id) { id name flavor } }","operationName":"Donut","variables":{"id":"`
	gqlBodyEnd   = `"}}`
	// baggage is the header the driver sends for the spec below; wrk sends it too.
	baggage = "soakd.run=bench,soakd.phase=bench,soakd.arm=bench"
)

// The operations measured, as config.yaml defines them; the driver is sent
// config.yaml's definitions, wrk the same requests written by hand below.
const (
	restGet      workloads.Operation = "rest-get"
	graphqlQuery workloads.Operation = "graphql-query"
)

type options struct {
	soakd, wrk           string
	users, rounds        int
	duration, warmup     time.Duration
	targetCPU, driverCPU string
	ops                  []workloads.Operation
	donuts               int
	// defs are config.yaml's operations.
	defs map[workloads.Operation]workloads.OperationDef
}

func main() {
	var o options
	serve := flag.Bool("serve", false, "internal: serve the target, print its URL and run until stdin closes")
	flag.StringVar(&o.soakd, "soakd", "bin/soakd", "the soakd binary whose driver is measured")
	flag.StringVar(&o.wrk, "wrk", "wrk", "the wrk binary")
	flag.IntVar(&o.users, "users", 32, "users of the driver, connections of wrk")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds per operation")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "length of each measured run")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured driver run per operation before its rounds (0: none)")
	flag.StringVar(&o.targetCPU, "target-cpu", "0", "CPU list the target is pinned to (taskset -c)")
	flag.StringVar(&o.driverCPU, "driver-cpu", "1", "CPU list soakd drive and wrk are pinned to (taskset -c)")
	ops := flag.String("ops", "rest-get,graphql-query", "operations measured: rest-get, graphql-query")
	flag.Parse()
	if *serve {
		if err := serveTarget(); err != nil {
			fmt.Fprintln(os.Stderr, "benchdriver target:", err)
			os.Exit(1)
		}
		return
	}
	for op := range strings.SplitSeq(*ops, ",") {
		switch w := workloads.Operation(op); w {
		case restGet, graphqlQuery:
			o.ops = append(o.ops, w)
		default:
			fmt.Fprintf(os.Stderr, "benchdriver: operation %q is not measured; want rest-get or graphql-query\n", op)
			os.Exit(2)
		}
	}
	cfg, err := builtinConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdriver:", err)
		os.Exit(1)
	}
	o.defs = cfg.Operations
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchdriver:", err)
		os.Exit(1)
	}
}

// serveTarget runs the target on a loopback port, prints its URL and serves
// until standard input closes.
func serveTarget() error {
	cfg, err := builtinConfig()
	if err != nil {
		return err
	}
	ctx := context.Background()
	t, err := builtin.Start(ctx, cfg, zap.NewNop())
	if err != nil {
		return err
	}
	fmt.Println(t.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return t.Shutdown(ctx)
}

// builtinConfig loads the repository's config.yaml for the built-in target
// on a free loopback port.
func builtinConfig() (*config.Config, error) {
	defaults, err := os.ReadFile("config.yaml")
	if err != nil {
		return nil, fmt.Errorf("run from the repository root: %w", err)
	}
	return config.Load(defaults, []byte("server:\n  listen: 127.0.0.1:0\nsampler:\n  interval: 1s\n"), "bench")
}

// measurement is one tool's run.
type measurement struct {
	op       workloads.Operation
	round    int
	tool     string
	requests int64
	cpu      time.Duration
	wall     time.Duration
}

func (m measurement) perRequest() float64 {
	return m.cpu.Seconds() * 1e6 / float64(m.requests)
}

func run(o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	target := exec.Command("taskset", "-c", o.targetCPU, self, "-serve")
	target.Stderr = os.Stderr
	stdin, err := target.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := target.StdoutPipe()
	if err != nil {
		return err
	}
	if err := target.Start(); err != nil {
		return fmt.Errorf("cannot start the target: %w", err)
	}
	defer func() {
		stdin.Close()
		_ = target.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		return fmt.Errorf("target answered %q, want a loopback URL", url)
	}
	dir, err := os.MkdirTemp("", "benchdriver")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(os.Stderr, "target %s on CPU %s; drivers on CPU %s; %d connections, %s per run, %d rounds\n",
		url, o.targetCPU, o.driverCPU, o.users, o.duration, o.rounds)
	var all []measurement
	for _, op := range o.ops {
		script := filepath.Join(dir, string(op)+".lua")
		if err := os.WriteFile(script, []byte(wrkScript(op, 1000)), 0o644); err != nil {
			return err
		}
		if o.warmup > 0 {
			if _, err := drive(o, url, op, o.warmup, 0); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
		for r := 1; r <= o.rounds; r++ {
			d, err := drive(o, url, op, o.duration, uint64(r))
			if err != nil {
				return err
			}
			d.round = r
			all = append(all, d)
			fmt.Fprintf(os.Stderr, "%s round %d soakd: %d requests, %.2f µs/request\n", op, r, d.requests, d.perRequest())
			w, err := runWrk(o, url, op, script)
			if err != nil {
				return err
			}
			w.round = r
			all = append(all, w)
			fmt.Fprintf(os.Stderr, "%s round %d wrk:   %d requests, %.2f µs/request\n", op, r, w.requests, w.perRequest())
		}
	}
	fmt.Print(table(all))
	return nil
}

// wrkScript is a wrk Lua script sending the driver's requests for op with
// ids drawn uniformly from 1..donuts, with the driver's headers.
func wrkScript(op workloads.Operation, donuts int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "math.randomseed(%d)\n", time.Now().UnixNano()%1_000_000)
	fmt.Fprintf(&b, "wrk.headers[\"Accept\"] = \"application/json\"\nwrk.headers[\"Baggage\"] = %q\n", baggage)
	switch op {
	case restGet:
		fmt.Fprintf(&b, "request = function()\n  return wrk.format(\"GET\", \"/api/donuts/\" .. math.random(%d))\nend\n", donuts)
	case graphqlQuery:
		b.WriteString("wrk.headers[\"Content-Type\"] = \"application/json\"\n")
		fmt.Fprintf(&b, "local s, e = '%s', '%s'\n", gqlBodyStart, gqlBodyEnd)
		fmt.Fprintf(&b, "request = function()\n  return wrk.format(\"POST\", \"/graphql\", nil, s .. math.random(%d) .. e)\nend\n", donuts)
	}
	// No response() callback: it would make wrk parse every response into
	// Lua and charge wrk CPU the bare tool does not spend. wrk's own count
	// of responses with status 400 and above ("Non-2xx or 3xx responses")
	// fails the run instead.
	return b.String()
}

// drive runs `soakd drive` for op and returns its requests and CPU.
func drive(o options, url string, op workloads.Operation, d time.Duration, seed uint64) (measurement, error) {
	spec, err := json.Marshal(workloads.Phase{
		Name: "bench", Arm: "bench", Run: "bench",
		Groups:         []workloads.UserGroup{{Operation: op, Users: o.users}},
		Duration:       d,
		RequestTimeout: 10 * time.Second,
		Operations:     map[workloads.Operation]workloads.OperationDef{op: o.defs[op]},
		Seed:           seed,
	})
	if err != nil {
		return measurement{}, err
	}
	cmd := exec.Command("taskset", "-c", o.driverCPU, o.soakd, "drive", "--target", url, "--spec", "-")
	cmd.Stdin = bytes.NewReader(spec)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	m, err := measure(cmd, op, "soakd drive")
	if err != nil {
		return m, fmt.Errorf("soakd drive %s: %w: %s", op, err, errOut.Bytes())
	}
	var res *workloads.Result
	err = workloads.ReadMessages(context.Background(), &out, func(msg workloads.Message) error {
		switch msg.Type {
		case workloads.MessageResult:
			res = msg.Result
		case workloads.MessageError:
			return errors.New(msg.Error)
		}
		return nil
	})
	switch {
	case err != nil:
		return m, fmt.Errorf("soakd drive %s: %w", op, err)
	case res == nil:
		return m, fmt.Errorf("soakd drive %s: no result", op)
	case res.Errors != 0 || res.Requests == 0:
		return m, fmt.Errorf("soakd drive %s: %d requests, %d errors: %v", op, res.Requests, res.Errors, res.ErrorExamples)
	}
	m.requests = res.Requests
	return m, nil
}

// runWrk runs wrk with script and returns its requests and CPU.
func runWrk(o options, url string, op workloads.Operation, script string) (measurement, error) {
	secs := strconv.Itoa(int(o.duration.Round(time.Second) / time.Second))
	cmd := exec.Command("taskset", "-c", o.driverCPU, o.wrk, "-t1", "-c"+strconv.Itoa(o.users), "-d"+secs+"s", "-s", script, url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	m, err := measure(cmd, op, "wrk")
	if err != nil {
		return m, fmt.Errorf("wrk %s: %w: %s", op, err, out.Bytes())
	}
	n, err := parseWrk(out.String())
	if err != nil {
		return m, fmt.Errorf("wrk %s: %w:\n%s", op, err, out.Bytes())
	}
	m.requests = n
	return m, nil
}

var wrkRequests = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)

// parseWrk returns the requests of wrk's report, and an error when it
// reports socket errors (connect, read, write, timeout) or responses with a
// status of 400 or above.
func parseWrk(out string) (int64, error) {
	m := wrkRequests.FindStringSubmatch(out)
	if m == nil {
		return 0, errors.New(`no "N requests in" line`)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("bad request count %q", m[1])
	}
	if strings.Contains(out, "Socket errors:") || strings.Contains(out, "Non-2xx or 3xx responses:") {
		return 0, errors.New("wrk reported errors")
	}
	return n, nil
}

// measure runs cmd and returns its user+system CPU from wait4's rusage.
func measure(cmd *exec.Cmd, op workloads.Operation, tool string) (measurement, error) {
	start := time.Now()
	err := cmd.Run()
	m := measurement{op: op, tool: tool, wall: time.Since(start)}
	if cmd.ProcessState == nil {
		return m, err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return m, errors.New("no rusage")
	}
	m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return m, err
}

// table renders the measurements as markdown, each tool's ratio to wrk in
// the same round, then each operation's median ratio.
func table(ms []measurement) string {
	var b strings.Builder
	b.WriteString("| operation | round | tool | requests | CPU s | µs/request | ratio to wrk |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|\n")
	wrkPer := map[string]float64{}
	for _, m := range ms {
		if m.tool == "wrk" {
			wrkPer[fmt.Sprint(m.op, m.round)] = m.perRequest()
		}
	}
	ratios := map[workloads.Operation][]float64{}
	var order []workloads.Operation
	for _, m := range ms {
		ratio := m.perRequest() / wrkPer[fmt.Sprint(m.op, m.round)]
		if m.tool != "wrk" {
			if _, seen := ratios[m.op]; !seen {
				order = append(order, m.op)
			}
			ratios[m.op] = append(ratios[m.op], ratio)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %.2f | %.2f | %.2f× |\n", m.op, m.round, m.tool, m.requests, m.cpu.Seconds(), m.perRequest(), ratio)
	}
	b.WriteString("\n")
	for _, op := range order {
		r := slices.Sorted(slices.Values(ratios[op]))
		fmt.Fprintf(&b, "%s: soakd drive / wrk CPU per request, median of %d rounds: %.2f× (range %.2f–%.2f×)\n",
			op, len(r), r[len(r)/2], r[0], r[len(r)-1])
	}
	return b.String()
}
