package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var req StartRequest
	if err := dec.Decode(&req); err != nil {
		return StartRequest{}, describe(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return StartRequest{}, errors.New("malformed JSON: unexpected data after the object")
	}
	return req, nil
}

// describe turns an encoding/json error into a message for the client.
// Type and unknown-field errors are reworded, since the originals name Go
// types.
func describe(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("malformed JSON: the body ends mid-value")
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %w", syntax.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("malformed body: want a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("invalid field %q: want a string, got %s", typ.Field, typ.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s; a start request takes only profile and overrides", field)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}
