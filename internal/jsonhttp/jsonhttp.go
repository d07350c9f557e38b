// Package jsonhttp is the one JSON-over-HTTP client of soakd: the control
// API's client (`soakd start`, `runs`, …) and the orchestrator's calls to
// the built-in target's control surface both send through it.
package jsonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client sends JSON requests with a bearer token and reads JSON answers.
// Its zero HTTP field is usable.
type Client struct {
	// BaseURL is prefixed to every path; a trailing slash is ignored.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" when non-empty.
	Token string
	// HTTP performs the requests; nil means http.DefaultClient. Bound each
	// call with its Timeout or the ctx given to Do.
	HTTP *http.Client
	// MaxResponseBytes bounds an answer's body, in bytes, so a wrong or
	// hostile server cannot make the caller buffer without end; 0 means
	// no bound (a server soakd started itself).
	MaxResponseBytes int64
}

// StatusError is a non-2xx answer: its status and its body (within
// MaxResponseBytes), for the caller to turn into its own error.
type StatusError struct {
	Status int
	Body   []byte
}

// Error gives the status and the start of the body.
func (e *StatusError) Error() string {
	msg := strings.TrimSpace(string(e.Body))
	const maxSnippet = 4096
	if len(msg) > maxSnippet {
		msg = strings.ToValidUTF8(msg[:maxSnippet], "") + "..."
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(e.Status))
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, msg)
}

// Do sends method to BaseURL+path with in as its JSON body (none when in
// is nil) and decodes a 2xx answer into out (discarded when out is nil).
// Another status is a *StatusError; a transport error is the
// *url.Error, which names the method and URL but never the headers.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("cannot encode the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("cannot build the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if c.MaxResponseBytes > 0 {
		r = io.LimitReader(resp.Body, c.MaxResponseBytes+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("cannot read the response: %w", err)
	}
	if c.MaxResponseBytes > 0 && int64(len(data)) > c.MaxResponseBytes {
		return fmt.Errorf("response larger than %d bytes", c.MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Status: resp.StatusCode, Body: data}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("cannot decode the response: %w", err)
	}
	return nil
}
