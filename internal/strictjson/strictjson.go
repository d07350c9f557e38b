// Package strictjson decodes a request body strictly, with errors worded
// for the client that sent it: the one decoder of the control API, the
// REST control group and the built-in target's control surface.
package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Decode decodes exactly one JSON value from r into v: no field v does not
// have, nothing but whitespace after it. takes says what the body may
// hold ("a start request takes only profile and overrides"), for the
// message about an unknown field. The error names what was wrong without
// Go type names; a *http.MaxBytesError from r stays on its chain, for the
// caller's 413.
func Decode(r io.Reader, v any, takes string) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(err, takes)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return err
		}
		return errors.New("malformed JSON: unexpected data after the object")
	}
	return nil
}

// describe turns an encoding/json error into a message for the client.
// Type and unknown-field errors are reworded without the original text,
// which would leak Go type names.
func describe(err error, takes string) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("malformed JSON: empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: the body ends mid-value")
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %w", syntax.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("malformed body: want a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("invalid field %q: want a %s, got %s", typ.Field, typ.Type.Kind(), typ.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s; %s", field, takes)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}
