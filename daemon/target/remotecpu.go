package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/nofollow"
	"github.com/soakd/soakd/profiles"
)

// RemoteCPUChunk is the length of one CPU profile fetched from a target's
// /debug/pprof/profile. The endpoint profiles for a number of seconds
// given up front, and the steady window's length is known only when it
// ends, so the window is covered by back-to-back chunks; the chunk in
// flight when the window ends is cancelled and left out, so a profile
// never covers time after the window, and the requests it is divided by
// are counted over the chunks it holds (Chunks). One second keeps what is
// lost at the end under a second. It costs the target one profile
// encoding a second, after each chunk's profiling stopped: not in the
// profiles, but in the process's CPU clock, as the built-in target's own
// profiler is (both arms' compared phases pay it alike).
const RemoteCPUChunk = time.Second

// Chunk is the span one merged profile chunk covered.
type Chunk struct{ From, To time.Time }

// Windowed is a CPU profile that knows the spans it covered: what the
// capture divides it by is the requests completed within them.
type Windowed interface {
	Chunks() []Chunk
}

// chunkedCPU profiles a Go target from its pprof endpoint in chunks.
type chunkedCPU struct {
	url, path string
	cancel    context.CancelFunc
	done      chan struct{}

	mu     sync.Mutex
	profs  []*profile.Profile
	chunks []Chunk
	err    error
}

// startChunkedCPU starts fetching chunks of base+"profile" until Stop.
func startChunkedCPU(ctx context.Context, base, path string, chunk time.Duration) *chunkedCPU {
	ctx, cancel := context.WithCancel(ctx)
	r := &chunkedCPU{url: fmt.Sprintf("%sprofile?seconds=%d", base, max(int(chunk/time.Second), 1)), path: path, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			from := time.Now()
			p, err := fetchCPUChunk(ctx, r.url)
			to := time.Now()
			if ctx.Err() != nil {
				return // the window ended while this chunk ran: left out
			}
			r.mu.Lock()
			if err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			r.profs = append(r.profs, p)
			r.chunks = append(r.chunks, chunkSpan(from, to, p.DurationNanos))
			r.mu.Unlock()
		}
	}()
	return r
}

// chunkSpan is the span a chunk profiled: from when it was asked for, as
// long as the profile says it ran (DurationNanos, the server's own
// measure), not until its answer arrived, which adds the server's
// encoding and the transfer; the answer's arrival when the profile gives
// no duration or a longer one than the exchange took.
func chunkSpan(from, to time.Time, durationNanos int64) Chunk {
	if d := time.Duration(durationNanos); d > 0 && d <= to.Sub(from) {
		return Chunk{From: from, To: from.Add(d)}
	}
	return Chunk{From: from, To: to}
}

// Stop cancels the chunk in flight, waits for the fetching to end and
// writes the completed chunks merged into one profile, atomically.
func (r *chunkedCPU) Stop() error {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.profs) == 0 {
		if r.err != nil {
			return r.err
		}
		return fmt.Errorf("GET %s: the steady window ended before the first %s chunk did", r.url, RemoteCPUChunk)
	}
	m, err := profile.Merge(r.profs)
	if err != nil {
		return fmt.Errorf("cannot merge the CPU profile's chunks: %w", err)
	}
	// A chunk that failed after others ended the profile early: the
	// chunks written say how far it reaches.
	return fsutil.WriteWith(r.path, 0o644, m.Write)
}

// Chunks are the spans of the chunks the written profile holds.
func (r *chunkedCPU) Chunks() []Chunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Chunk(nil), r.chunks...)
}

// fetchCPUChunk GETs one CPU profile chunk and parses it.
func fetchCPUChunk(ctx context.Context, url string) (*profile.Profile, error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteCPUChunk+profileTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := nofollow.Client(0).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		// net/http/pprof says why in the body ("cpu profiling already in
		// use" when something else profiles the server).
		err := fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, bytes.TrimSpace(b[:min(len(b), 200)]))
		if resp.StatusCode == http.StatusNotFound {
			err = fmt.Errorf("%w (serve net/http/pprof's Profile handler at target.pprof_url + \"profile\", as import _ \"net/http/pprof\" does on the default mux)", err)
		}
		return nil, err
	}
	if len(b) > maxProfileBytes {
		return nil, fmt.Errorf("GET %s: over %d bytes", url, maxProfileBytes)
	}
	p, err := profiles.ParseBounded(b)
	if err != nil {
		return nil, fmt.Errorf("GET %s: not a CPU profile: %w", url, err)
	}
	if len(p.SampleType) == 0 || p.SampleType[len(p.SampleType)-1].Type != "cpu" {
		return nil, errors.New("GET " + url + ": not a CPU profile (no cpu sample type)")
	}
	return p, nil
}
