package extsample

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestAdaptInterval(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name                string
		base, longest, cost time.Duration
		share               float64
		want                time.Duration
	}{
		{"a cheap scrape keeps the interval", 250 * ms, time.Second, ms, 0.005, 250 * ms},
		{"prom-client's 4 ms at 0.5 %: 800 ms", 250 * ms, 2 * time.Second, 4 * ms, 0.005, 800 * ms},
		{"31 ms would want 6.2 s: capped", 250 * ms, time.Second, 31 * ms, 0.005, time.Second},
		{"nothing scraped", 250 * ms, time.Second, 0, 0.005, 250 * ms},
		{"adaptation off", 250 * ms, time.Second, 31 * ms, -1, 250 * ms},
		{"a cap below the base is the base", 250 * ms, 100 * ms, 31 * ms, 0.005, 250 * ms},
	} {
		if got := AdaptInterval(c.base, c.longest, c.cost, c.share); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// pipeListener serves HTTP over in-memory pipes, so that a real HTTP server
// and client run inside a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestRunLengthensTheIntervalForASlowScrape: an endpoint that takes 20 ms
// to answer (prom-client on a busy event loop) is scraped every 250 ms by a
// fixed interval, 8 % of the target's time. Run lengthens the interval to
// keep the scrape within 0.5 %, up to its cap (2 s), and goes back to the
// configured interval when the scrape is cheap again.
func TestRunLengthensTheIntervalForASlowScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		delay := 20 * time.Millisecond
		l := newPipeListener()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			d := delay
			mu.Unlock()
			time.Sleep(d)
			_, _ = w.Write([]byte("# TYPE go_goroutines gauge\ngo_goroutines 7\n"))
		})}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		client := &http.Client{Transport: &http.Transport{DialContext: l.dial}}
		s, err := New(t.Context(), Options{Endpoint: "http://127.0.0.1:9/metrics", Interval: 250 * time.Millisecond,
			MaxInterval: 2 * time.Second, Timeout: 5 * time.Second, Client: client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- s.Run(ctx) }()

		time.Sleep(20 * time.Second)
		slow := s.Samples(time.Time{}, time.Now())
		mu.Lock()
		delay = time.Millisecond
		mu.Unlock()
		time.Sleep(20 * time.Second)
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		all := s.Samples(time.Time{}, time.Now())
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("serve: %v", err)
		}
		client.CloseIdleConnections()

		// 20 ms ÷ 0.5 % is 4 s: the cap, 2 s, once the smoothed cost is there.
		// A fixed 250 ms interval would have taken 80 samples in 20 s.
		if n := len(slow); n < 10 || n > 14 {
			t.Errorf("%d samples in 20 s of 20 ms scrapes, want 10 to 14 (every 2 s)", n)
		}
		last := slow[len(slow)-1].Time.Sub(slow[len(slow)-2].Time)
		if last != 2*time.Second {
			t.Errorf("interval %s once the scrape's cost is known, want the 2 s cap", last)
		}
		// 1 ms ÷ 0.5 % is 200 ms, below the configured 250 ms: back to it once
		// the smoothed cost has come down.
		end := all[len(all)-2].Time.Sub(all[len(all)-3].Time)
		if end != 250*time.Millisecond {
			t.Errorf("interval %s after the scrape got cheap, want the configured 250 ms", end)
		}
		for _, smp := range all {
			if smp.ScrapeNanoseconds <= 0 {
				t.Fatalf("a sample without its scrape's cost: %+v", smp)
			}
		}
	})
}

// TestSlowScrapeIsReported: a real loopback endpoint that takes 5 ms to
// answer, sampled back to back, costs far more than 0.5 % of the window:
// the summary says so, with the figures it may have moved. A cheap scrape
// (samples built by hand, 1 ms every second) does not.
func TestSlowScrapeIsReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(5 * time.Millisecond)
		_, _ = w.Write([]byte("# TYPE go_goroutines gauge\ngo_goroutines 7\n"))
	}))
	t.Cleanup(srv.Close)
	s, err := New(t.Context(), Options{Endpoint: srv.URL, Interval: time.Second, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var ss []Sample
	for range 4 {
		smp, err := s.SampleNow(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, smp)
	}
	sum, _, err := Summarize(ss, time.Second, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.ScrapeOverLimit || sum.ScrapeLimitPercent != 0.5 || sum.ScrapeCostMeanUs < 5000 ||
		!slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.Contains(n, "above the 0.5 % limit") }) {
		t.Errorf("a 5 ms scrape back to back: over %v, %.2f %% (limit %.1f %%), notes %q", sum.ScrapeOverLimit, sum.ScrapeCorePercent, sum.ScrapeLimitPercent, sum.Notes)
	}

	cheap := make([]Sample, 4)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range cheap {
		cheap[i] = ss[i]
		cheap[i].Time, cheap[i].ScrapeNanoseconds = t0.Add(time.Duration(i)*time.Second), int64(time.Millisecond)
	}
	sum, _, err = Summarize(cheap, 3*time.Second, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ScrapeOverLimit || sum.ScrapeCorePercent != 0.1 {
		t.Errorf("1 ms a second: over %v at %.3f %%, want 0.1 %% and within the limit", sum.ScrapeOverLimit, sum.ScrapeCorePercent)
	}
}
