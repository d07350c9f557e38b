package kubetest

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// logBuffer is a container's output as the kubelet keeps it: whole lines,
// each with the time it was written, appended until the process exits.
type logBuffer struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every append, close and drop
	lines   []logLine
	closed  bool
	drops   int // DropLogStreams calls: a stream opened before one ends
	partial map[*lineWriter][]byte
}

type logLine struct {
	at   time.Time
	text []byte
}

func newLogBuffer() *logBuffer {
	return &logBuffer{changed: make(chan struct{}), partial: map[*lineWriter][]byte{}}
}

// writer is an io.Writer (one per stream: stdout, stderr) appending whole
// lines to b.
func (b *logBuffer) writer() *lineWriter { return &lineWriter{b: b} }

type lineWriter struct{ b *logBuffer }

func (w *lineWriter) Write(p []byte) (int, error) {
	b := w.b
	b.mu.Lock()
	defer b.mu.Unlock()
	buf := append(b.partial[w], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		b.lines = append(b.lines, logLine{at: time.Now().UTC(), text: append([]byte(nil), buf[:i+1]...)})
		buf = buf[i+1:]
	}
	b.partial[w] = append([]byte(nil), buf...)
	b.notify()
	return len(p), nil
}

// notify wakes every follower; b.mu is held.
func (b *logBuffer) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// close ends the log: followers get what is left and then EOF.
func (b *logBuffer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for w, rest := range b.partial {
		if len(rest) > 0 {
			b.lines = append(b.lines, logLine{at: time.Now().UTC(), text: append(rest, '\n')})
		}
		delete(b.partial, w)
	}
	b.closed = true
	b.notify()
}

// drop ends every stream open now, between two lines.
func (b *logBuffer) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drops++
	b.notify()
}

// serveLogs answers the kubelet's /containerLogs/{ns}/{pod}/{container}
// with the query the API server sends for pods/log: follow, timestamps,
// sinceTime (RFC 3339), sinceSeconds, tailLines and limitBytes.
func (a *Agent) serveLogs(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	run := a.pods[r.PathValue("ns")+"/"+r.PathValue("pod")]
	a.mu.Unlock()
	if run == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s is not on this node", r.PathValue("ns"), r.PathValue("pod")), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	follow, _ := strconv.ParseBool(q.Get("follow"))
	stamps, _ := strconv.ParseBool(q.Get("timestamps"))
	var since time.Time
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "sinceTime: "+err.Error(), http.StatusBadRequest)
			return
		}
		since = t
	}
	if s := q.Get("sinceSeconds"); s != "" {
		n, _ := strconv.Atoi(s)
		since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	limit := int64(-1)
	if s := q.Get("limitBytes"); s != "" {
		limit, _ = strconv.ParseInt(s, 10, 64)
	}
	b := run.logs
	b.mu.Lock()
	next, drops := 0, b.drops
	if s := q.Get("tailLines"); s != "" {
		n, _ := strconv.Atoi(s)
		next = max(len(b.lines)-n, 0)
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
			if l.at.Before(since) {
				continue
			}
			out := l.text
			if stamps {
				out = append([]byte(l.at.Format(time.RFC3339Nano)+" "), l.text...)
			}
			if limit >= 0 && sent+int64(len(out)) > limit {
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
		if !follow || closed || dropped {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}
