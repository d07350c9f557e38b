package workloads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Client sends the driver's HTTP requests. NewClient's sends them with
// fasthttp's HTTP/1.1 keep-alive client (what bombardier uses): each request
// is written and its response read on the user's own goroutine, with no
// per-connection reader and writer goroutines and almost no allocation, which
// halves net/http's CPU per request (see docs/methodology.md, "Trusting the numbers").
// HTTPClient's sends them through a net/http client, for tests whose target is
// an in-memory http.RoundTripper. Both read every response whole and hand it
// to the same validation.
type Client struct {
	conns   int
	timeout time.Duration
	std     *http.Client // set by HTTPClient

	mu    sync.Mutex
	hosts map[string]*fasthttp.HostClient // by scheme://host
}

// NewClient returns a client for a phase of conns connections at most (the
// users of a closed phase; see Phase.Connections): a keep-alive pool of up to
// conns connections per target (a request that finds them all busy waits for
// one, at most timeout), no proxy, no compression, no redirects followed, no
// retries (a failure is counted, never hidden), and timeout as the limit for
// dialling. Idle connections are closed after 90 s, before the target's
// idle_timeout (120 s by default) closes them under a request.
func NewClient(conns int, timeout time.Duration) *Client {
	return &Client{conns: max(conns, 1), timeout: timeout, hosts: make(map[string]*fasthttp.HostClient)}
}

// HTTPClient returns a client that sends requests through c. Run bounds
// every request with a context deadline of Phase.RequestTimeout, so c needs
// no Timeout.
func HTTPClient(c *http.Client) *Client {
	return &Client{std: c}
}

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() {
	if c.std != nil {
		c.std.CloseIdleConnections()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, hc := range c.hosts {
		hc.CloseIdleConnections()
	}
}

// header is one request header.
type header struct {
	key   string
	value []byte
}

// sender sends one request. send returns the response's status code and its
// whole body appended to buf[:0], or an error when no complete response came.
type sender interface {
	send(c *call, timeout time.Duration, buf []byte) (status int, body []byte, err error)
}

// senderTo returns what sends c's requests to the host of target, an
// absolute http or https URL (checked before); each host gets one pool.
func (c *Client) senderTo(target string) sender {
	if c.std != nil {
		return stdSender{c.std}
	}
	base, err := url.Parse(target)
	if err != nil { // endpoints are parsed before an engine is built
		return errSender{fmt.Errorf("invalid URL %q: %w", target, err)}
	}
	key := base.Scheme + "://" + base.Host
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc := c.hosts[key]; hc != nil {
		return fastSender{hc}
	}
	tls := base.Scheme == "https"
	addr := base.Host
	if base.Port() == "" {
		port := "80"
		if tls {
			port = "443"
		}
		addr = net.JoinHostPort(base.Hostname(), port)
	}
	dialTimeout := c.timeout
	hc := &fasthttp.HostClient{
		Addr:                      addr,
		IsTLS:                     tls,
		MaxConns:                  c.conns,
		MaxConnWaitTimeout:        c.timeout,
		MaxIdleConnDuration:       90 * time.Second,
		MaxIdemponentCallAttempts: 1,
		MaxResponseBodySize:       maxResponseBytes,
		NoDefaultUserAgentHeader:  true,
		DisablePathNormalizing:    true,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			if timeout <= 0 || timeout > dialTimeout {
				timeout = dialTimeout
			}
			d := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return nil, err
			}
			return wrapConn(c), nil
		},
	}
	c.hosts[key] = hc
	return fastSender{hc}
}

// errSender fails every request with its error.
type errSender struct{ err error }

func (s errSender) send(_ *call, _ time.Duration, buf []byte) (int, []byte, error) {
	return 0, buf[:0], s.err
}

// fastSender sends requests with a fasthttp HostClient.
type fastSender struct{ hc *fasthttp.HostClient }

func (s fastSender) send(c *call, timeout time.Duration, buf []byte) (int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(c.method)
	req.SetRequestURIBytes(c.url)
	for _, h := range c.headers {
		req.Header.SetBytesV(h.key, h.value)
	}
	if c.body != nil {
		req.SetBodyRaw(c.body)
	}
	if err := s.hc.DoTimeout(req, resp, timeout); err != nil {
		return 0, buf[:0], err
	}
	return resp.StatusCode(), append(buf[:0], resp.Body()...), nil
}

// stdSender sends requests with a net/http client.
type stdSender struct{ c *http.Client }

func (s stdSender) send(c *call, timeout time.Duration, buf []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, string(c.url), body)
	if err != nil {
		return 0, buf[:0], fmt.Errorf("cannot build request: %w", err)
	}
	for _, h := range c.headers {
		req.Header.Set(h.key, string(h.value))
	}
	resp, err := s.c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // the caller names the method and URL
			err = ue.Err
		}
		return 0, buf[:0], err
	}
	defer resp.Body.Close()
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(io.LimitReader(resp.Body, maxResponseBytes)); err != nil {
		return 0, b.Bytes(), fmt.Errorf("cannot read body: %w", err)
	}
	return resp.StatusCode, b.Bytes(), nil
}
