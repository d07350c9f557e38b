// Package schemas ships the JSON Schemas (draft 2020-12) of soakd's machine
// outputs, so that a consumer can check what it reads and a change to an
// output's shape shows up as a change to its schema:
//
//	report.schema.json   a run's report.json (schema_version 1)
//	soak.schema.json     data_dir/soak.json, a soak's cycles and drift (schema_version 1)
//	compare.schema.json  soakd compare --format json (schema_version 1)
//	driver.schema.json   one JSON line the driver (soakd drive) writes (version 1)
//
// The schemas are generated from the Go types that encode each output
// (go test ./schemas -update rewrites them; the package's tests fail when
// they and the types disagree), with additionalProperties false on every
// object soakd defines, every field encoding/json always writes required,
// null allowed only where Go writes it, and enums for closed vocabularies
// (outcomes, statuses, verdicts, units).
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// files holds the schemas; they are embedded so that a binary (and a test
// in any package) can validate against them without finding the
// repository.
//
//go:embed *.schema.json
var files embed.FS

// The schema names: the documents soakd writes for machines.
const (
	// Report is report.json.
	Report = "report"
	// Soak is data_dir/soak.json.
	Soak = "soak"
	// Compare is the output of soakd compare --format json.
	Compare = "compare"
	// Driver is one JSON line of the driver protocol.
	Driver = "driver"
)

// Names lists every schema, in the order of the package comment.
func Names() []string { return []string{Report, Soak, Compare, Driver} }

// File is the file name of schema name, e.g. "report.schema.json".
func File(name string) string { return name + ".schema.json" }

// ID is schema name's $id: where the repository publishes it, so that a
// consumer can name (and fetch) the schema a document is checked against.
func ID(name string) string {
	return "https://raw.githubusercontent.com/soakd/soakd/main/schemas/" + File(name)
}

// Read returns the text of schema name.
func Read(name string) ([]byte, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("no schema %q: soakd has %v", name, Names())
	}
	b, err := files.ReadFile(File(name))
	if err != nil {
		return nil, fmt.Errorf("cannot read schema %s: %w", name, err)
	}
	return b, nil
}

// Compile compiles schema name for validation.
func Compile(name string) (*jsonschema.Schema, error) {
	b, err := Read(name)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema %s is not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := ID(name)
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("cannot load schema %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("cannot compile schema %s: %w", name, err)
	}
	return s, nil
}

// Validate checks the JSON document doc against schema name; the error
// names every place where doc breaks the schema.
func Validate(name string, doc []byte) error {
	s, err := Compile(name)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not a JSON document: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("does not match schema %s: %w", File(name), err)
	}
	return nil
}
