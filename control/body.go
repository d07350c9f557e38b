package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/soakd/soakd/internal/donut"
)

// donutBody is the PUT body; the id comes from the path, never the body.
type donutBody struct {
	Name   string       `json:"name"`
	Flavor donut.Flavor `json:"flavor"`
}

// decodeDonutBody strictly decodes and validates one PUT body: exactly one
// JSON object with no unknown fields and nothing but whitespace after it, a
// non-empty name and a valid flavour. It returns a nil body exactly when it
// returns an error; the error message names what was wrong. A
// *http.MaxBytesError from r is returned wrapped, for the caller's 413.
func decodeDonutBody(r io.Reader) (*donutBody, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var b donutBody
	if err := dec.Decode(&b); err != nil {
		return nil, describe(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, err
		}
		return nil, errors.New("malformed JSON: unexpected data after the object")
	}
	if b.Name == "" {
		return nil, errors.New(`invalid field "name": must not be empty`)
	}
	if !b.Flavor.Valid() {
		return nil, fmt.Errorf(`invalid field "flavor": %q is not one of VANILLA, STRAWBERRY, CHOCOLATE`, b.Flavor)
	}
	return &b, nil
}

// describe turns an encoding/json error into a message for the client that
// names what was wrong. Type and unknown-field errors are reworded without the
// original text, which would leak Go type names.
func describe(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("malformed JSON: empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("malformed JSON: body ends mid-value: %w", err)
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %w", syntax.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("malformed body: want a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("invalid field %q: want a %s, got %s", typ.Field, typ.Type.Kind(), typ.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s; the body takes only name and flavor", field)
	}
	return fmt.Errorf("malformed JSON: %w", err)
}
