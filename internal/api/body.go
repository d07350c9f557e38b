package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/soakd/soakd/internal/strictjson"
)

// decodeStartRequest strictly decodes a POST /v1/runs body: empty (or only
// whitespace), meaning the zero request, or exactly one JSON object with no
// fields but profile and overrides and nothing after it. Reading stops at
// MaxBodyBytes+1 bytes, so a reader that is not already limited cannot make
// it buffer more. The error message is meant for the client: it names what
// was wrong without Go type names.
func decodeStartRequest(r io.Reader) (StartRequest, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return StartRequest{}, fmt.Errorf("request body too large: the limit is %d bytes", MaxBodyBytes)
		}
		return StartRequest{}, fmt.Errorf("cannot read the request body: %w", err)
	}
	if len(body) > MaxBodyBytes {
		return StartRequest{}, fmt.Errorf("request body too large: the limit is %d bytes", MaxBodyBytes)
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return StartRequest{}, nil
	}
	if trimmed[0] != '{' {
		return StartRequest{}, errors.New("malformed body: want a JSON object such as {\"profile\":\"quick\"}")
	}
	var req StartRequest
	if err := strictjson.Decode(bytes.NewReader(trimmed), &req, "a start request takes only profile and overrides"); err != nil {
		return StartRequest{}, err
	}
	return req, nil
}
