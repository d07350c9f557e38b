package config

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestTargetConfigDefaultsToBuiltin: the embedded config measures the
// built-in target, as before the target: section existed.
func TestTargetConfigDefaultsToBuiltin(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	if tc := cfg.Target; tc.Kind != "builtin" || tc.External() || tc.Runtime != "auto" {
		t.Errorf("target: %+v, want builtin", tc)
	}
}

// TestTargetConfigAccepts: well-formed attach and command sections load.
func TestTargetConfigAccepts(t *testing.T) {
	for name, doc := range map[string]string{
		"attach by pid": `
target:
  kind: attach
  pid: 1
  graphql_url: http://127.0.0.1:4000/graphql
  rest_url: http://localhost:8081/
  metrics_url: http://[::1]:9100/metrics
  runtime: node
`,
		"attach by pid file": `
target:
  kind: attach
  pid_file: /run/server.pid
  graphql_url: https://127.0.0.1:4000/graphql
  graphql_ws_url: wss://127.0.0.1:4000/graphql/ws
  rest_url: https://127.0.0.1:4000
`,
		"attach, no REST twin": `
target:
  kind: attach
  pid: 1
  graphql_url: http://127.0.0.1:4000/graphql
`,
		"command": `
target:
  kind: command
  argv: [/usr/local/bin/server, --port, "4000"]
  env: {GOGC: "200"}
  dir: /tmp
  graphql_url: http://127.0.0.1:4000/graphql
  rest_url: http://127.0.0.1:4000
  metrics_url: http://127.0.0.1:4000/metrics
  pprof_url: http://127.0.0.1:4000/debug/pprof/
  runtime: go
  ready_url: http://127.0.0.1:4000/healthz
  ready_timeout: 5s
  stop_grace: 2s
`,
		"off loopback, opted in": `
target:
  kind: attach
  pid: 1
  graphql_url: http://10.0.0.5:4000/graphql
  rest_url: http://10.0.0.6:8080
  allow_non_loopback: true
`,
	} {
		if _, err := Load(defaults(t), []byte(doc), "user.yaml"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestTargetConfigRefuses: every problem of a target: section is named by
// its key, all at once.
func TestTargetConfigRefuses(t *testing.T) {
	ps := problems(t, "target:\n  kind: remote\n")
	has(t, ps, "target.kind", 2, "must be builtin, attach, command or kubernetes")

	// Keys of another kind are refused, not ignored.
	ps = problems(t, `
target:
  kind: builtin
  graphql_url: http://127.0.0.1:4000/graphql
  pid: 12
  argv: [x]
`)
	has(t, ps, "target.graphql_url", 4, "is read only for target.kind attach or command")
	has(t, ps, "target.pid", 5, "is read only for target.kind attach")
	has(t, ps, "target.argv", 6, "is read only for target.kind command")

	ps = problems(t, `
target:
  kind: attach
  graphql_url: ftp://127.0.0.1/graphql
  graphql_ws_url: http://127.0.0.1:4000/graphql
  metrics_url: http://127.0.0.1:9100/metrics?x=1
  runtime: python
  ready_url: http://127.0.0.1:4000/healthz
  argv: [server]
`)
	has(t, ps, "target.graphql_url", 4, "must be an absolute http or https URL")
	has(t, ps, "target.graphql_ws_url", 5, "must be an absolute ws or wss URL")
	has(t, ps, "target.metrics_url", 6, "without query or fragment")
	has(t, ps, "target.runtime", 7, "must be go, node, dotnet, jvm or auto")
	has(t, ps, "target.pid", 0, "set target.pid or target.pid_file")
	has(t, ps, "target.argv", 9, "is read only for target.kind command")

	ps = problems(t, `
target:
  kind: attach
  pid: 12
  pid_file: /run/x.pid
  graphql_url: http://127.0.0.1:4000/graphql
  rest_url: http://127.0.0.1:4000
`)
	has(t, ps, "target.pid", 4, "not both")

	ps = problems(t, "target:\n  kind: attach\n  pid: "+strconv.Itoa(os.Getpid())+"\n  graphql_url: http://127.0.0.1:1/graphql\n  rest_url: http://127.0.0.1:1\n")
	has(t, ps, "target.pid", 3, "is soakd itself")

	// Loopback only, unless opted in.
	ps = problems(t, `
target:
  kind: attach
  pid: 12
  graphql_url: http://example.com/graphql
  rest_url: http://0.0.0.0:8080
  metrics_url: http://192.168.1.2:9100/metrics
`)
	has(t, ps, "target.graphql_url", 5, "is not on loopback")
	has(t, ps, "target.rest_url", 6, "target.allow_non_loopback: true")
	has(t, ps, "target.metrics_url", 7, "is not on loopback")

	ps = problems(t, `
target:
  kind: command
  graphql_url: http://127.0.0.1:4000/graphql
  rest_url: http://127.0.0.1:4000
  pprof_url: http://127.0.0.1:4000/debug/pprof/
  runtime: jvm
  env: {"A=B": x}
  ready_timeout: 100ms
  stop_grace: -1s
`)
	has(t, ps, "target.argv", 0, "command needs the program to start")
	has(t, ps, "target.ready_url", 0, "must be set for target.kind command")
	has(t, ps, "target.pprof_url", 6, "is a Go target's /debug/pprof/")
	has(t, ps, "target.env", 8, `"A=B" is not an environment variable name`)
	has(t, ps, "target.ready_timeout", 9, "must be between 1s and 1h")
	has(t, ps, "target.stop_grace", 10, "must be between 0s and 10m")

	// The built-in target's own switches mean nothing for another server.
	ps = problems(t, `
target:
  kind: attach
  pid: 12
  graphql_url: http://127.0.0.1:4000/graphql
  rest_url: http://127.0.0.1:4000
inject:
  graphql_alloc_bytes_per_request: 10
pinning:
  target: "0"
  driver: "1"
profiling:
  pyroscope:
    server_address: http://127.0.0.1:4040
`)
	has(t, ps, "inject", 0, "plants a regression in the built-in target")
	has(t, ps, "pinning.target", 0, "pins the built-in target's process")
	has(t, ps, "profiling.pyroscope.server_address", 0, "pushes the built-in target's profiles")
}

// TestTargetOverrideRefused: a run on `soakd serve` cannot switch the
// daemon's target.
func TestTargetOverrideRefused(t *testing.T) {
	err := RefuseOverrides([]byte("target:\n  kind: attach\n"), "overrides")
	if err == nil || !strings.Contains(err.Error(), "target.kind: override refused") {
		t.Errorf("override of target.kind: %v", err)
	}
}

// TestKubernetesTargetConfig: a kind kubernetes target loads with its
// Service URLs and selector; each problem of target.kubernetes is named by
// its key, and the keys of a process target are refused for it.
func TestKubernetesTargetConfig(t *testing.T) {
	cfg, err := Load(defaults(t), []byte(`
target:
  kind: kubernetes
  graphql_url: http://books.shop.svc:4000/graphql
  rest_url: http://books.shop.svc:4000
  allow_non_loopback: true
  kubernetes: {namespace: shop, selector: "app=books,tier in (api)", metrics_port: metrics, scrape_via: pod_ip, min_replicas: 3}
`), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.Target.Kubernetes; k.MetricsPath != "/metrics" || k.MinReplicas != 3 || !cfg.Target.External() {
		t.Errorf("target.kubernetes %+v", k)
	}
	ps := problems(t, `
target:
  kind: kubernetes
  graphql_url: http://127.0.0.1:4000/graphql
  metrics_url: http://127.0.0.1:4000/metrics
  pid: 3
  kubernetes: {namespace: Shop, selector: "", metrics_port: "99999", metrics_path: metrics, scrape_via: proxy, min_replicas: 0}
`)
	has(t, ps, "target.metrics_url", 5, "is read only for target.kind attach or command")
	has(t, ps, "target.pid", 6, "is read only for target.kind attach")
	for key, msg := range map[string]string{
		"namespace": "must be a namespace name", "selector": "an empty selector would take every pod",
		"metrics_port": "must be a port number 1 … 65535", "metrics_path": "must be a path such as /metrics",
		"scrape_via": "must be api_server", "min_replicas": "must be between 1 and 1000",
	} {
		has(t, ps, "target.kubernetes."+key, 0, msg)
	}
	ps = problems(t, "target:\n  kind: attach\n  pid: 3\n  graphql_url: http://127.0.0.1:1/graphql\n  kubernetes: {selector: app=x}\n")
	has(t, ps, "target.kubernetes.selector", 0, "is read only for target.kind kubernetes")
}
