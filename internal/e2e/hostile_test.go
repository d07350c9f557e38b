package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/soakd/soakd/internal/api"
)

// hostileEnv is a real `soakd serve` under attack: its target's base URL,
// its control API and its process.
type hostileEnv struct {
	d      *daemonProc
	target string
	cl     *api.Client
	dir    string
	bin    string
}

// hostileProbe is one hostile input and what soakd must do with it: check
// returns an error when soakd did not hold.
type hostileProbe struct {
	name  string
	check func(t *testing.T, e *hostileEnv) error
}

// TestHostileInputsEndToEnd sends the hostile inputs a red-team pass found
// (issue 10) to a real `soakd serve` with introspection on, one after the
// other, and checks each is refused cheaply; then, after a forced GC, that
// the target's live heap, goroutines and RSS are back near where they began.
// Before the fixes the introspection probe alone grew RSS by ~800 MB and
// each huge query kept ~19 MB of live heap.
func TestHostileInputsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	cfg := serveConfig(t, dir, fmt.Sprintf("server:\n  listen: 127.0.0.1:%d\ngraphql:\n  introspection: true\n  apq_cache_bytes: 1048576\n", port))
	d := startServe(t, bin, cfg)
	e := &hostileEnv{d: d, target: "http://127.0.0.1:" + strconv.Itoa(port), cl: &api.Client{BaseURL: d.api}, dir: dir, bin: bin}

	before := e.resources(t)
	for _, p := range hostileProbes() {
		t.Run(p.name, func(t *testing.T) {
			if err := p.check(t, e); err != nil {
				t.Error(err)
			}
			t.Logf("target after %s: %+v", p.name, e.resources(t))
		})
	}
	after := e.resources(t)
	t.Logf("target before: %+v; after: %+v", before, after)
	const heapSlack, rssSlack = 8 << 20, 96 << 20
	if after.heapLive > before.heapLive+heapSlack {
		t.Errorf("live heap after a forced GC grew from %d to %d bytes (slack %d): hostile input is being kept", before.heapLive, after.heapLive, heapSlack)
	}
	if after.rss > before.rss+rssSlack {
		t.Errorf("RSS grew from %d to %d bytes (slack %d)", before.rss, after.rss, rssSlack)
	}
	if after.goroutines > before.goroutines+3 {
		t.Errorf("goroutines grew from %d to %d: a probe left some behind", before.goroutines, after.goroutines)
	}
}

func hostileProbes() []hostileProbe {
	return []hostileProbe{
		{"introspection aliases", func(t *testing.T, e *hostileEnv) error {
			var q strings.Builder
			q.WriteString("{")
			for i := range 15000 {
				fmt.Fprintf(&q, "a%d: __schema { types { name fields { name args { name } } } } ", i)
			}
			q.WriteString("}")
			return e.refusedCheaply(t, q.String(), "alias")
		}},
		{"huge distinct queries", func(t *testing.T, e *hostileEnv) error {
			for n := range 6 {
				var q strings.Builder
				q.WriteString("{")
				for i := range 45000 {
					fmt.Fprintf(&q, "q%d_%d: __typename ", n, i)
				}
				q.WriteString("}")
				if err := e.refusedCheaply(t, q.String(), ""); err != nil {
					return fmt.Errorf("query %d: %w", n, err)
				}
			}
			return nil
		}},
		{"persisted-query flood", func(t *testing.T, e *hostileEnv) error {
			// Distinct valid-looking persisted queries of ~400 KB each: the
			// APQ cache is bounded by bytes (apq_cache_bytes, 1 MiB here).
			// Each also names its operation: before operation names were
			// copied, each name's series label kept its whole query alive.
			for n := range 24 {
				var q strings.Builder
				fmt.Fprintf(&q, "query P%d { donut(id: \"1\") { id } }", n)
				q.WriteString(strings.Repeat(" ", 400<<10))
				sum := sha256.Sum256([]byte(q.String()))
				body, _ := json.Marshal(map[string]any{"query": q.String(), "extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}})
				resp, err := http.Post(e.target+"/graphql", "application/json", bytes.NewReader(body))
				if err != nil {
					return err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return nil
		}},
		{"malformed body is not echoed", func(t *testing.T, e *hostileEnv) error {
			body := append([]byte(`{"query": "`), bytes.Repeat([]byte("x"), 900<<10)...)
			resp, err := http.Post(e.target+"/graphql", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
			if resp.StatusCode != http.StatusBadRequest || len(out) > 4<<10 {
				return fmt.Errorf("a %d-byte malformed body got status %d and a %d-byte response, want 400 and at most 4 KiB", len(body), resp.StatusCode, len(out))
			}
			return nil
		}},
		{"duplicate subscription id", func(t *testing.T, e *hostileEnv) error {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.target, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
			if err != nil {
				return err
			}
			defer c.CloseNow()
			sub := `{"id":"dup","type":"subscribe","payload":{"query":"subscription { onDonutUpdated(id: \"1\") { id } }"}}`
			for _, msg := range []string{`{"type":"connection_init"}`, sub, sub} {
				if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
					return err
				}
			}
			for {
				_, _, err := c.Read(ctx)
				if err == nil {
					continue // connection_ack
				}
				if st := websocket.CloseStatus(err); st != 4409 {
					return fmt.Errorf("a second subscribe with id dup: %v, want close 4409", err)
				}
				return nil
			}
		}},
		{"second daemon on the same data_dir", func(t *testing.T, e *hostileEnv) error {
			// Another serve on the same data_dir, on ports of its own:
			// before the lock it marked the first daemon's runs aborted.
			cfg := filepath.Join(e.dir, "second.yaml")
			doc := tinyConfig + fmt.Sprintf("\ndata_dir: %s\napi:\n  listen: 127.0.0.1:%d\n", filepath.Join(e.dir, "data"), freeLoopbackPort(t))
			if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
				return err
			}
			_, stderr, code := runSoakd(t, e.bin, "serve", "--config", cfg)
			want := fmt.Sprintf("is in use by pid %d", e.d.cmd.Process.Pid)
			if code != 2 || !strings.Contains(stderr, want) {
				return fmt.Errorf("second serve: exit %d, want 2 and %q\n%s", code, want, stderr)
			}
			runs, err := e.cl.List(t.Context())
			if err != nil {
				return err
			}
			for _, r := range runs {
				if r.Status == "aborted" {
					return fmt.Errorf("run %s aborted after the second daemon gave up", r.ID)
				}
			}
			return nil
		}},
		{"override the target cannot honour", func(t *testing.T, e *hostileEnv) error {
			_, err := e.cl.Start(t.Context(), api.StartRequest{Profile: "tiny", Overrides: "sampler:\n  interval: 200ms\ngraphql:\n  max_depth: 99\n"})
			if err == nil || !strings.Contains(err.Error(), "sampler.interval") || !strings.Contains(err.Error(), "graphql.max_depth") || !strings.Contains(err.Error(), "400") {
				return fmt.Errorf("start with refused overrides: %v, want 400 naming sampler.interval and graphql.max_depth", err)
			}
			return nil
		}},
		{"override does not leak into the next run", func(t *testing.T, e *hostileEnv) error {
			short := "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n      - name: rest-control\n        arm: rest\n        users: [{operation: rest-get, users: 2, iterations: 200}]\n      - name: graphql-load\n        arm: graphql\n        users: [{operation: graphql-query, users: 2, iterations: 200}]\n"
			first, err := e.cl.Start(t.Context(), api.StartRequest{Profile: "tiny", Overrides: short + "kpis:\n  cpu_increase_points: 999\n"})
			if err != nil {
				return err
			}
			if r := waitStatus(t, e.cl, first.ID, "complete", "aborted"); r.Status != "complete" {
				return fmt.Errorf("the overridden run did not complete: %+v", r)
			}
			second, err := e.cl.Start(t.Context(), api.StartRequest{Profile: "tiny", Overrides: short})
			if err != nil {
				return err
			}
			if r := waitStatus(t, e.cl, second.ID, "complete", "aborted"); r.Status != "complete" {
				return fmt.Errorf("the next run did not complete: %+v", r)
			}
			limits := map[string]float64{}
			for _, id := range []string{first.ID, second.ID} {
				_, raw, err := e.cl.Get(t.Context(), id)
				if err != nil {
					return err
				}
				var rep struct {
					KPIs []struct {
						Name      string   `json:"name"`
						Threshold *float64 `json:"threshold"`
					} `json:"kpis"`
				}
				if err := json.Unmarshal(raw, &rep); err != nil {
					return err
				}
				for _, k := range rep.KPIs {
					if k.Name == "cpu_machine_percent" && k.Threshold != nil {
						limits[id] = *k.Threshold
					}
				}
			}
			if limits[first.ID] != 999 || limits[second.ID] != 5 {
				return fmt.Errorf("CPU limit of the overridden run %v and of the next %v, want 999 then 5", limits[first.ID], limits[second.ID])
			}
			return nil
		}},
	}
}

// refusedCheaply posts a GraphQL query and checks the target refused it
// with a GraphQL error (mentioning want, when not empty) in a small response.
func (e *hostileEnv) refusedCheaply(t *testing.T, query, want string) error {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	resp, err := http.Post(e.target+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if len(out) > 64<<10 {
		return fmt.Errorf("a %d-byte query got a %d-byte response (status %d): not refused", len(body), len(out), resp.StatusCode)
	}
	var gr struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(out, &gr); err != nil || len(gr.Errors) == 0 {
		return fmt.Errorf("a %d-byte query was not refused with a GraphQL error (status %d): %.300s", len(body), resp.StatusCode, out)
	}
	if want != "" && !strings.Contains(strings.ToLower(gr.Errors[0].Message), want) {
		return fmt.Errorf("refusal %q does not mention %q", gr.Errors[0].Message, want)
	}
	return nil
}

// targetResources is what the hostile test watches on the target.
type targetResources struct {
	heapLive, rss uint64
	goroutines    int
}

// resources forces a GC in the target (pprof's heap endpoint with gc=1),
// waits a moment for goroutines of finished requests to end, and reads
// the live heap and goroutines from /metrics and the RSS from /proc.
func (e *hostileEnv) resources(t *testing.T) targetResources {
	t.Helper()
	get := func(path string) []byte {
		resp, err := http.Get(e.target + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	time.Sleep(500 * time.Millisecond)
	get("/debug/pprof/heap?gc=1")
	var r targetResources
	sc := bufio.NewScanner(bytes.NewReader(get("/metrics")))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_gc_heap_live_bytes":
			r.heapLive = uint64(f)
		case "go_goroutines":
			r.goroutines = int(f)
		}
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(e.d.cmd.Process.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			r.rss = kb << 10
		}
	}
	if r.heapLive == 0 || r.goroutines == 0 || r.rss == 0 {
		t.Fatalf("cannot read the target's resources: %+v", r)
	}
	return r
}
