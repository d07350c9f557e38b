package kubetest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// logBuffer is a container instance's output as the kubelet keeps it:
// whole lines, each with the time it was read and its stream, kept in
// memory for the pod's life so that a reader can start again from the
// beginning or from any time.
type logBuffer struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append, close and drop
	lines   []logLine
	closed  bool // the process ended: followers get the rest, then EOF
	drops   int  // DropLogStreams calls: a stream opened before one ends
}

type logLine struct {
	at     time.Time
	stream string // stdout or stderr
	text   []byte // with its newline
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

// append adds one line (text ends with a newline).
func (b *logBuffer) append(stream string, text []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, logLine{at: time.Now().UTC(), stream: stream, text: text})
	b.notify()
}

// readFrom appends r's lines until EOF or an error; a last line without
// a newline gets one, as the kubelet's log files end every line.
func (b *logBuffer) readFrom(stream string, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			b.append(stream, line)
		}
		if err != nil {
			return
		}
	}
}

// notify wakes every follower; b.mu is held.
func (b *logBuffer) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// close ends the log.
func (b *logBuffer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.notify()
}

// drop ends every stream open now, after the line it is writing.
func (b *logBuffer) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drops++
	b.notify()
}

// tail is the last n lines, for a failed test's log.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, l := range b.lines[max(len(b.lines)-n, 0):] {
		s.Write(l.text)
	}
	return s.String()
}

// logQuery is the kubelet's /containerLogs query, as kube-apiserver's
// pods/log sends it (pkg/registry/core/pod/strategy.go LogLocation).
type logQuery struct {
	follow, timestamps, previous bool
	since                        time.Time // zero: from the start
	tailLines, limitBytes        int64     // -1: all
	stream                       string    // "", All, Stdout or Stderr
}

// parseLogQuery reads q at now (sinceSeconds counts back from it).
func parseLogQuery(q map[string][]string, now time.Time) (logQuery, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	lq := logQuery{tailLines: -1, limitBytes: -1, stream: get("stream")}
	for k, dst := range map[string]*bool{"follow": &lq.follow, "timestamps": &lq.timestamps, "previous": &lq.previous} {
		if s := get(k); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return lq, fmt.Errorf("%s=%q: want true or false", k, s)
			}
			*dst = v
		}
	}
	if s := get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return lq, fmt.Errorf("sinceTime=%q: want RFC 3339: %w", s, err)
		}
		lq.since = t
	}
	for k, dst := range map[string]*int64{"sinceSeconds": nil, "tailLines": &lq.tailLines, "limitBytes": &lq.limitBytes} {
		s := get(k)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return lq, fmt.Errorf("%s=%q: want a whole number ≥ 0", k, s)
		}
		if dst == nil {
			lq.since = now.Add(-time.Duration(n) * time.Second)
		} else {
			*dst = n
		}
	}
	switch lq.stream {
	case "", "All", "Stdout", "Stderr":
	default:
		return lq, fmt.Errorf("stream=%q: want All, Stdout or Stderr", lq.stream)
	}
	return lq, nil
}

// keeps says whether a line is in the query's selection (tailLines aside).
func (lq logQuery) keeps(l logLine) bool {
	if !lq.since.IsZero() && l.at.Before(lq.since) {
		return false
	}
	return lq.stream == "" || lq.stream == "All" || strings.EqualFold(lq.stream, l.stream)
}

// serveLogs answers /containerLogs/{ns}/{pod}/{container}: the container's
// lines selected by the query, each prefixed with its RFC 3339 (nano) time
// and a space with timestamps=true, as the kubelet writes them; with
// follow=true it keeps writing lines as they come, and ends when the
// process has ended (all written), when DropLogStreams drops it (between
// two lines), or when the client goes.
func (a *Agent) serveLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	lq, err := parseLogQuery(r.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	var b *logBuffer
	if run := a.pods[ns+"/"+pod]; run != nil {
		for _, cr := range run.containers {
			if cr.spec.Name == container {
				b = cr.logs
				if lq.previous {
					b = cr.prevLogs
				}
			}
		}
	}
	a.mu.Unlock()
	if b == nil {
		what := "container " + container + " of pod " + ns + "/" + pod + " is not on this node"
		if lq.previous {
			what = "previous terminated container " + container + " of pod " + ns + "/" + pod + " not found"
		}
		http.Error(w, what, http.StatusNotFound)
		return
	}
	b.mu.Lock()
	next, drops := 0, b.drops
	if lq.tailLines >= 0 {
		// The last tailLines of the selection, counted back from the end.
		kept := int64(0)
		for next = len(b.lines); next > 0 && kept < lq.tailLines; next-- {
			if lq.keeps(b.lines[next-1]) {
				kept++
			}
		}
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var sent int64
	for {
		b.mu.Lock()
		lines, closed, changed, dropped := b.lines[next:], b.closed, b.changed, b.drops != drops
		next = len(b.lines)
		b.mu.Unlock()
		for _, l := range lines {
			if !lq.keeps(l) {
				continue
			}
			out := l.text
			if lq.timestamps {
				out = append([]byte(l.at.Format(time.RFC3339Nano)+" "), l.text...)
			}
			if lq.limitBytes >= 0 && sent+int64(len(out)) > lq.limitBytes {
				_, _ = w.Write(out[:lq.limitBytes-sent]) // the kubelet cuts at the byte
				return
			}
			if _, err := w.Write(out); err != nil {
				return
			}
			sent += int64(len(out))
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !lq.follow || closed || dropped {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}
