package profiles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

// ingested is one POST /ingest that pyroscope-go sent, decoded.
type ingested struct {
	app     string            // the application name before the tags
	tags    map[string]string // the {k=v,...} part of the name query parameter
	spyName string
	from    string
	until   string
	user    string // HTTP basic auth
	pass    string
	prof    *profile.Profile
}

// isCPU reports whether the upload is a CPU profile.
func (u ingested) isCPU() bool { return hasSampleType(u.prof, "cpu", "nanoseconds") }

// isHeap reports whether the upload is a heap profile.
func (u ingested) isHeap() bool { return hasSampleType(u.prof, "alloc_space", "bytes") }

func hasSampleType(p *profile.Profile, typ, unit string) bool {
	for _, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			return true
		}
	}
	return false
}

// parseAppName splits pyroscope's "app{k=v,k2=v2}" name.
func parseAppName(name string) (string, map[string]string, error) {
	app, rest, ok := strings.Cut(name, "{")
	if !ok || !strings.HasSuffix(rest, "}") {
		return "", nil, fmt.Errorf("name %q is not app{tags}", name)
	}
	tags := make(map[string]string)
	for kv := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", nil, fmt.Errorf("name %q has a tag without '='", name)
		}
		tags[k] = v
	}
	return app, tags, nil
}

// decodeIngest decodes what pyroscope-go's upstream/remote sends: POST /ingest?name=app{tags}&from=&until=
// &spyName=&format... with a multipart body whose "profile" part is a (gzip'd) pprof profile, or a raw
// pprof body.
func decodeIngest(r *http.Request) (ingested, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" {
		return ingested{}, fmt.Errorf("got %s %s, want POST /ingest", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	u := ingested{spyName: q.Get("spyName"), from: q.Get("from"), until: q.Get("until")}
	var err error
	if u.app, u.tags, err = parseAppName(q.Get("name")); err != nil {
		return u, err
	}
	u.user, u.pass, _ = r.BasicAuth()
	var data []byte
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(8 << 20); err != nil {
			return u, fmt.Errorf("cannot read multipart body: %w", err)
		}
		f, _, err := r.FormFile("profile")
		if err != nil {
			return u, fmt.Errorf("no profile part: %w", err)
		}
		defer func() { _ = f.Close() }()
		if data, err = io.ReadAll(f); err != nil {
			return u, err
		}
	} else if data, err = io.ReadAll(r.Body); err != nil {
		return u, err
	}
	if u.prof, err = profile.ParseData(data); err != nil {
		return u, fmt.Errorf("cannot parse the pprof profile: %w", err)
	}
	return u, nil
}

// ingestReceiver is a loopback stand-in for a Pyroscope server's ingest endpoint.
type ingestReceiver struct {
	mu      sync.Mutex
	uploads []ingested
	errs    []error
}

func (rc *ingestReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, err := decodeIngest(r)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil {
		rc.errs = append(rc.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.uploads = append(rc.uploads, u)
}

func (rc *ingestReceiver) snapshot() ([]ingested, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]ingested(nil), rc.uploads...), errors.Join(rc.errs...)
}

// waitFor polls the receiver until cond holds for its uploads or a bounded time passes.
func (rc *ingestReceiver) waitFor(t *testing.T, what string, cond func([]ingested) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ups, err := rc.snapshot()
		if err != nil {
			t.Fatalf("receiver: %v", err)
		}
		if cond(ups) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: got %d uploads in 20s, none matching", what, len(ups))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hasLabelled reports whether a CPU upload has a sample with all the labels in want.
func hasLabelled(ups []ingested, want map[string]string) bool {
	for _, u := range ups {
		if !u.isCPU() {
			continue
		}
	samples:
		for _, s := range u.prof.Sample {
			for k, v := range want {
				if got := s.Label[k]; len(got) != 1 || got[0] != v {
					continue samples
				}
			}
			return true
		}
	}
	return false
}

func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestStartPyroscope(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// pyroscope-go lets this variable redirect the push; keep it off the test.
	t.Setenv("PYROSCOPE_ADHOC_SERVER_ADDRESS", "")
	if err := os.Unsetenv("PYROSCOPE_ADHOC_SERVER_ADDRESS"); err != nil {
		t.Fatal(err)
	}

	rc := &ingestReceiver{}
	ingest := httptest.NewServer(rc)
	defer ingest.Close()

	// The labelled target: each request burns CPU and allocates, so GC runs on its own.
	var served atomic.Int64
	target := httptest.NewServer(Labeled("graphql", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		defer served.Add(1)
		b := make([]byte, 256<<10)
		b[len(b)-1] = byte(burnCPU(5 * time.Millisecond))
		runtime.KeepAlive(b)
	})))
	defer target.Close()

	forcedBefore := forcedGCs()
	stop, err := StartPyroscope(PyroscopeOptions{
		ServerAddress:     ingest.URL,
		ApplicationName:   "soakd.test",
		Tags:              map[string]string{"run": "test", "arm": "graphql"},
		BasicAuthUser:     "soakd",
		BasicAuthPassword: "secret",
		UploadRate:        time.Second,
	}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("StartPyroscope: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()

	// Drive the labelled handler until a CPU upload shows its labels and a heap upload arrived.
	ctx, cancel := context.WithCancel(t.Context())
	var traffic sync.WaitGroup
	traffic.Go(func() {
		client := target.Client()
		for ctx.Err() == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL+"/graphql", nil)
			if err != nil {
				return
			}
			req.Header.Set("Baggage", "soakd.run=test,soakd.phase=graphql-1,soakd.arm=graphql")
			if resp, err := client.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
	})
	// A local capture while the push runs shares its profiler: both get the samples. While it runs the
	// push's CPU profile is not cut; the capture's window is uploaded when it stops.
	capture := CapturePath(t.TempDir(), "graphql-1", CaptureCPU)
	local, err := StartCPUProfile(capture)
	if err != nil {
		t.Fatalf("StartCPUProfile while pushing: %v", err)
	}
	localStopped := false
	defer func() {
		if !localStopped {
			_ = local.Stop() // before the push's stop, which waits for foreground profiles
		}
	}()
	for served.Load() < 200 {
		runtime.Gosched()
	}
	localStopped = true
	if err := local.Stop(); err != nil {
		t.Fatalf("a local capture while pushing: %v", err)
	}
	want := map[string]string{LabelEndpoint: "graphql", LabelRun: "test", LabelPhase: "graphql-1", LabelArm: "graphql"}
	rc.waitFor(t, "a cpu upload with the request labels and a heap upload", func(ups []ingested) bool {
		heap := false
		for _, u := range ups {
			heap = heap || u.isHeap()
		}
		return heap && hasLabelled(ups, want)
	})
	cancel()
	traffic.Wait()
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatalf("the local capture taken while pushing: %v", err)
	}
	labelled := slices.ContainsFunc(p.Sample, func(s *profile.Sample) bool {
		return slices.Equal(s.Label[LabelPhase], []string{"graphql-1"}) && slices.Equal(s.Label[LabelArm], []string{"graphql"})
	})
	if !labelled {
		t.Errorf("the local capture has %d samples, none labelled phase=graphql-1 arm=graphql", len(p.Sample))
	}

	// A stretch with the collector off: without DisableGCRuns, pyroscope-go forces a GC at a heap upload
	// when none ran since the last one, so it would do so at the next upload period and at the flush in
	// stop. Wait for one more CPU upload, which it cuts one to two upload periods after the previous one.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ups, _ := rc.snapshot()
	quietFrom := len(ups)
	rc.waitFor(t, "a cpu upload after the traffic", func(ups []ingested) bool {
		return slices.ContainsFunc(ups[quietFrom:], ingested.isCPU)
	})
	before := len(ups)
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped = true
	if err := stop(); err != nil {
		t.Errorf("second stop: got %v, want nil", err)
	}
	if got := forcedGCs(); got != forcedBefore {
		t.Errorf("forced GC cycles across the push: got %d more, want none (DisableGCRuns)", got-forcedBefore)
	}

	ups, err = rc.snapshot()
	if err != nil {
		t.Fatalf("receiver: %v", err)
	}
	if len(ups) <= before {
		t.Errorf("uploads at stop: got none, want the flushed profiles")
	}
	for _, u := range ups {
		if u.app != "soakd.test" {
			t.Errorf("application name: got %q, want %q", u.app, "soakd.test")
		}
		if u.tags["run"] != "test" || u.tags["arm"] != "graphql" {
			t.Errorf("tags: got %v, want run=test and arm=graphql among them", u.tags)
		}
		if u.spyName != "gospy" || u.from == "" || u.until == "" {
			t.Errorf("query: got spyName %q, from %q, until %q; want gospy and a time range", u.spyName, u.from, u.until)
		}
		if u.user != "soakd" || u.pass != "secret" {
			t.Errorf("basic auth: got %q/%q, want soakd/secret", u.user, u.pass)
		}
	}
}

func TestStartPyroscopeDisabled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	stop, err := StartPyroscope(PyroscopeOptions{}, nil)
	if err != nil || stop == nil {
		t.Fatalf("StartPyroscope with no server: got stop %v, error %v; want a no-op stop and nil", stop != nil, err)
	}
	if err := stop(); err != nil {
		t.Errorf("no-op stop: got %v, want nil", err)
	}
	// The CPU profiler is free: nothing was started.
	c, err := StartCPUProfile(CapturePath(t.TempDir(), "p", CaptureCPU))
	if err != nil {
		t.Fatalf("StartCPUProfile with Pyroscope off: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestStartPyroscopeRejects(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := func(o PyroscopeOptions) {
		t.Helper()
		stop, err := StartPyroscope(o, nil)
		if err == nil {
			_ = stop()
			t.Errorf("StartPyroscope(%+v): got nil error, want one", o)
		}
	}
	f(PyroscopeOptions{ServerAddress: "127.0.0.1:4040"})
	f(PyroscopeOptions{ServerAddress: "ftp://127.0.0.1:4040"})
	f(PyroscopeOptions{ServerAddress: "http://[::1"})
	f(PyroscopeOptions{ServerAddress: "http://127.0.0.1:4040", UploadRate: -time.Second})
	f(PyroscopeOptions{ServerAddress: "http://127.0.0.1:4040", Tags: map[string]string{"bad key": "x"}})
}

func TestParseAppName(t *testing.T) {
	app, tags, err := parseAppName("soakd{__session_id__=ab,arm=graphql,run=test}")
	if err != nil || app != "soakd" || len(tags) != 3 || tags["arm"] != "graphql" {
		t.Errorf("parseAppName: got %q %v %v, want soakd with 3 tags", app, tags, err)
	}
	if _, _, err := parseAppName("soakd"); err == nil {
		t.Error("parseAppName without tags: got nil error, want one")
	}
}
