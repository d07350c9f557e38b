package builtin

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/gqlws"
	"github.com/soakd/soakd/internal/testkit"
)

func TestTargetServesEverything(t *testing.T) {
	cfg := testkit.Config(t, "sampler:\n  interval: 50ms\nserver:\n  read_header_timeout: 300ms\n  max_header_bytes: 4096\n")
	tg, err := Start(t.Context(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	if !strings.HasPrefix(tg.URL(), "http://127.0.0.1:") {
		t.Fatalf("the default listen address must be loopback, got %s", tg.URL())
	}
	f := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, body := testkit.Get(t, tg.URL()+path)
		if code != wantCode || !strings.Contains(body, wantBody) {
			t.Errorf("GET %s: got %d %.200q, want %d containing %q", path, code, body, wantCode, wantBody)
		}
	}
	f("/healthz", 200, "ok")
	f("/api/donuts/3", 200, `{"data":{"donut":{"id":"3","name":"donut-3","flavor":"VANILLA"}}}`)
	f("/graphql?query="+`%7Bdonut(id:%224%22)%7Bflavor%7D%7D`, 200, `{"data":{"donut":{"flavor":"STRAWBERRY"}}}`)
	f("/debug/pprof/", 200, "goroutine")
	// The GC figures the KPIs rest on, and process metrics, from a
	// non-global registry.
	f("/metrics", 200, "go_gc_cycles_total_gc_cycles_total")
	f("/metrics", 200, "go_cpu_classes_gc_total_cpu_seconds_total")
	f("/metrics", 200, "process_cpu_seconds_total")

	// Hardening: oversized headers are refused (net/http allows 4 KiB of
	// slack over max_header_bytes), slow headers time out.
	req, _ := http.NewRequest(http.MethodGet, tg.URL()+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 16384))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header: got %d, want 431", resp.StatusCode)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	// The server must close the connection once read_header_timeout passes
	// without the end of the headers; the deadline only bounds the test.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = bufio.NewReader(conn).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("a client that never finishes its headers was not disconnected")
	}

	// The sampler runs in the target.
	if ss := tg.Sampler.Samples(time.Time{}, time.Now().Add(time.Hour)); len(ss) == 0 {
		t.Errorf("the sampler took no sample")
	}
}

func TestTargetRefusesBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testkit.Config(t, "server:\n  listen: "+ln.Addr().String()+"\n")
	if _, err := Start(t.Context(), cfg, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "server.listen") {
		t.Errorf("a busy address must fail naming server.listen, got %v", err)
	}
}

// TestInjectCPUBurnsCPU checks the CPU switch by the process's own CPU
// clock (getrusage), not by wall time: 40 requests at 2,000 µs must burn
// at least half of the 80 ms planted; switched off at run time (as a
// daemon does after a run that planted it) 40 requests burn far less.
func TestInjectCPUBurnsCPU(t *testing.T) {
	in := newInjector(config.InjectConfig{GraphQLCPUMicrosPerRequest: 2000})
	h := in.wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	serve := func() time.Duration {
		before := cpu()
		for range 40 {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
		}
		return cpu() - before
	}
	if got := serve(); got < 40*time.Millisecond {
		t.Errorf("40 requests at 2000 µs burnt %s of CPU, want at least 40ms", got)
	}
	in.set(0, 0)
	if got := serve(); got > 20*time.Millisecond {
		t.Errorf("switched off, 40 requests burnt %s of CPU, want well under the 80 ms planted before", got)
	}
	in.set(2000, 0)
	if got := serve(); got < 40*time.Millisecond {
		t.Errorf("switched on again, 40 requests burnt %s of CPU, want at least 40ms", got)
	}
}

// TestSetInjectRefusesTheLeak: the leak cannot change while the target
// runs (what it kept stays kept); the CPU burn and allocation can.
func TestSetInjectRefusesTheLeak(t *testing.T) {
	s := &Server{inject: newInjector(config.InjectConfig{})}
	if err := s.SetInject(config.InjectConfig{GraphQLCPUMicrosPerRequest: 5, GraphQLAllocBytesPerRequest: 100}); err != nil {
		t.Fatal(err)
	}
	if s.inject.cpuUs.Load() != 5 || s.inject.alloc.Load() != 100 {
		t.Errorf("SetInject did not take: cpu %d µs, alloc %d B", s.inject.cpuUs.Load(), s.inject.alloc.Load())
	}
	if err := s.SetInject(config.InjectConfig{GraphQLLeakBytesPerRequest: 64}); err == nil || !strings.Contains(err.Error(), "inject.graphql_leak_bytes_per_request") {
		t.Errorf("a leak set at run time: %v, want an error naming the key", err)
	}
}

// TestTargetCapsSubscriptionsPerSocket checks that
// graphql.max_subscriptions_per_socket reaches the GraphQL handler: one
// subscription more than it allows closes the socket with 4429.
func TestTargetCapsSubscriptionsPerSocket(t *testing.T) {
	cfg := testkit.Config(t, "graphql:\n  max_subscriptions_per_socket: 2\n")
	tg, err := Start(t.Context(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tg.Shutdown(context.Background()) }()
	// A bound for a hung server only, generous for a loaded -race run.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := gqlws.Dial(ctx, "ws"+strings.TrimPrefix(tg.URL(), "http")+"/graphql", gqlws.TransportWS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const q = `subscription On($id: ID!) { onDonutUpdated(id: $id) { id } }`
	for _, id := range []string{"a", "b"} {
		if err := c.Subscribe(ctx, id, q, map[string]any{"id": "1"}); err != nil {
			t.Fatal(err)
		}
	}
	// The third closes the socket: the close may reach the client while
	// it is still subscribing or once it reads.
	err = c.Subscribe(ctx, "c", q, map[string]any{"id": "1"})
	if err == nil {
		_, err = c.Next(ctx)
	}
	if websocket.CloseStatus(err) != 4429 {
		t.Errorf("a third subscription with max_subscriptions_per_socket 2: got %v, want close 4429", err)
	}
}

// TestTargetWarnsWhenExposed: a target allowed off loopback says, at
// start, that /debug/pprof/ and the mutations are exposed.
func TestTargetWarnsWhenExposed(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	cfg := testkit.Config(t, "server:\n  listen: 0.0.0.0:0\n  allow_non_loopback: true\n")
	tg, err := Start(t.Context(), cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tg.Shutdown(context.Background()) }()
	var found bool
	for _, e := range logs.All() {
		found = found || strings.Contains(e.Message, "/debug/pprof/") && strings.Contains(e.Message, "mutations")
	}
	if !found {
		t.Errorf("no warning about /debug/pprof/ and mutations being exposed; logs: %v", logs.All())
	}
}
