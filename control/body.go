package control

import (
	"errors"
	"fmt"
	"io"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/strictjson"
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
	var b donutBody
	if err := strictjson.Decode(r, &b, "the body takes only name and flavor"); err != nil {
		return nil, err
	}
	if b.Name == "" {
		return nil, errors.New(`invalid field "name": must not be empty`)
	}
	if !b.Flavor.Valid() {
		return nil, fmt.Errorf(`invalid field "flavor": %q is not one of VANILLA, STRAWBERRY, CHOCOLATE`, b.Flavor)
	}
	return &b, nil
}
