package kubetest

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// logAgent is an agent serving one pod's container log b, without a
// cluster, for the log endpoint's own tests.
func logAgent(t *testing.T, b *logBuffer) *httptest.Server {
	t.Helper()
	a := &Agent{pods: map[string]*podRun{"ns/p": {containers: []*containerRun{{spec: corev1.Container{Name: "c"}, logs: b}}}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", a.serveLogs)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// client is srv's client, bounded: a stream that does not end fails the
// test instead of hanging it.
func client(srv *httptest.Server) *http.Client {
	c := *srv.Client()
	c.Timeout = 10 * time.Second
	return &c
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := client(srv).Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestKubeLogQuery(t *testing.T) {
	b := newLogBuffer()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, l := range []string{"out 0\n", "err 1\n", "out 2\n", "out 3\n"} {
		stream := "stdout"
		if strings.HasPrefix(l, "err") {
			stream = "stderr"
		}
		b.lines = append(b.lines, logLine{at: base.Add(time.Duration(i) * time.Second), stream: stream, text: []byte(l)})
	}
	b.close()
	srv := logAgent(t, b)
	for query, want := range map[string]string{
		"":                                "out 0\nerr 1\nout 2\nout 3\n",
		"?tailLines=2":                    "out 2\nout 3\n",
		"?sinceTime=2026-01-02T03:04:07Z": "out 2\nout 3\n",
		"?limitBytes=8":                   "out 0\ner",
		"?stream=Stderr":                  "err 1\n",
		"?stream=Stdout&tailLines=3":      "out 0\nout 2\nout 3\n",
		"?timestamps=true&tailLines=1":    "2026-01-02T03:04:08Z out 3\n",
		"?follow=true&sinceTime=" + "2026-01-02T03:04:08Z": "out 3\n",
	} {
		if code, got := get(t, srv, "/containerLogs/ns/p/c"+query); code != 200 || got != want {
			t.Errorf("query %q: %d %q, want %q", query, code, got, want)
		}
	}
	for path, want := range map[string]string{
		"/containerLogs/ns/p/c?tailLines=-1":        "tailLines",
		"/containerLogs/ns/p/c?sinceTime=yesterday": "sinceTime",
		"/containerLogs/ns/p/c?stream=both":         "stream",
		"/containerLogs/ns/p/other":                 "container other",
		"/containerLogs/ns/p/c?previous=true":       "previous",
	} {
		if code, got := get(t, srv, path); code < 400 || !strings.Contains(got, want) {
			t.Errorf("%s: %d %q, want an error naming %s", path, code, got, want)
		}
	}
}

// TestKubeLogDropBetweenLines: a follow stream dropped ends after whole
// lines; one opened after the drop is not dropped and gets every line.
func TestKubeLogDropBetweenLines(t *testing.T) {
	b := newLogBuffer()
	srv := logAgent(t, b)
	resp, err := client(srv).Get(srv.URL + "/containerLogs/ns/p/c?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); b.readFrom("stdout", r) }()
	if _, err := io.WriteString(w, "one\ntw"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || sc.Text() != "one" {
		t.Fatalf("first line %q", sc.Text())
	}
	b.drop()
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the drop: %q %v, want the stream's end", rest, err)
	}
	if _, err := io.WriteString(w, "o\nthree"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-done
	b.close()
	if code, got := get(t, srv, "/containerLogs/ns/p/c?follow=true"); code != 200 || got != "one\ntwo\nthree\n" {
		t.Errorf("reading again: %d %q, want every line (the last one ended)", code, got)
	}
}

// TestKubeVersionsMatchTheBuild: the versions Start looks for are the
// ones scripts/kube-binaries.sh builds (its go.mod files).
func TestKubeVersionsMatchTheBuild(t *testing.T) {
	for file, want := range map[string]string{
		"go.mod":      `(?m)^require k8s.io/kubernetes ` + regexp.QuoteMeta(KubernetesVersion) + `$`,
		"etcd/go.mod": `(?m)^require go.etcd.io/etcd/server/v3 ` + regexp.QuoteMeta(EtcdVersion) + `$`,
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "kubebuild", file))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(want).Match(b) {
			t.Errorf("scripts/kubebuild/%s does not match %s: update the constants in cluster.go with it", file, want)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "kubebuild", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// Every staging module at its release of the same version.
	minor := strings.TrimPrefix(KubernetesVersion, "v1.")
	for _, m := range regexp.MustCompile(`(?m)^replace (k8s.io/\S+) => \S+ (v\S+)$`).FindAllStringSubmatch(string(b), -1) {
		if m[2] != "v0."+minor {
			t.Errorf("scripts/kubebuild/go.mod replaces %s with %s, want v0.%s", m[1], m[2], minor)
		}
	}
}
