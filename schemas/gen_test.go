package schemas_test

import (
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/schemas"
	"github.com/soakd/soakd/workloads"
)

var update = flag.Bool("update", false, "rewrite the schemas from the Go types")

// TestSchemasMatchTheCode regenerates every schema from the Go types that
// encode its document and compares it with the file shipped: a field
// added, renamed or removed in the code without the schema following fails
// here (go test ./schemas -update accepts the change; review the diff, and
// bump the document's version when a field changed meaning or disappeared).
func TestSchemasMatchTheCode(t *testing.T) {
	for _, name := range schemas.Names() {
		t.Run(name, func(t *testing.T) {
			got, _, err := generate(name)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(schemas.File(name), got, 0o644); err != nil {
					t.Fatal(err)
				}
				return // the embedded copy is the old one until the next build
			}
			want, err := schemas.Read(name)
			if err != nil {
				t.Fatalf("%v (go test ./schemas -update writes it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from the Go types that write the document (go test ./schemas -update to accept, then review the diff)", schemas.File(name))
			}
		})
	}
}

// TestEnumsNameFields checks that every enum and const of the generator
// lands on a field: one whose type or field was renamed would silently
// leave that field unconstrained.
func TestEnumsNameFields(t *testing.T) {
	used := map[string]bool{}
	for _, name := range schemas.Names() {
		_, u, err := generate(name)
		if err != nil {
			t.Fatal(err)
		}
		for k := range u {
			used[k] = true
		}
	}
	for k := range enums() {
		if !used[k] {
			t.Errorf("enum %s matches no field of any schema's types: rename it with the type or field", k)
		}
	}
	for k := range consts() {
		if !used[k] {
			t.Errorf("const %s matches no field of any schema's types", k)
		}
	}
}

// document is one schema's root: the Go type encoded and what the schema
// says about it.
type document struct {
	root        reflect.Type
	title       string
	description string
}

// documents are the roots of the schemas.
func documents() map[string]document {
	return map[string]document{
		schemas.Report: {reflect.TypeFor[report.Report](), "soakd report.json",
			"A run's report: written into the run directory after every phase (status running) and at the end. docs/reports.md: report.json."},
		schemas.Soak: {reflect.TypeFor[run.SoakReport](), "soakd soak.json",
			"A soak's cycles and drift verdict, rewritten in data_dir after every cycle. docs/operations.md: Long soaks and drift."},
		schemas.Compare: {reflect.TypeFor[report.Comparison](), "soakd compare --format json",
			"Two runs compared phase by phase and metric by metric, with the verdict soakd compare exits with. docs/reports.md: soakd compare output."},
		schemas.Driver: {reflect.TypeFor[workloads.Message](), "soakd driver message",
			"One JSON line that the load driver (soakd drive) writes on its standard output: progress about once a second, a window per second when it is a shard, then a result or an error. docs/reports.md: The driver's lines."},
	}
}

// outcomes are the judged outcomes a row, check or rule can have.
var outcomes = []string{string(kpi.OutcomePass), string(kpi.OutcomeFail), string(kpi.OutcomeInconclusive), string(kpi.OutcomeNotMeasured)}

// enums are the closed vocabularies, by "<package>.<Type>.<json field>",
// or "<package>.<Type>" for a named string type.
func enums() map[string][]any {
	strs := func(vs ...string) []any {
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	status := strs(report.StatusRunning, report.StatusComplete, report.StatusAborted)
	verdicts := strs(string(kpi.OutcomePass), string(kpi.OutcomeFail), string(kpi.OutcomeInconclusive), string(kpi.OutcomeRunning), string(kpi.OutcomeAborted))
	judged := strs(string(kpi.OutcomePass), string(kpi.OutcomeFail), string(kpi.OutcomeInconclusive))
	models := strs(string(workloads.Closed), string(workloads.Open), string(workloads.Ramping), string(workloads.RampingRate))
	return map[string][]any{
		"kpi.Outcome":                    strs(outcomes...),
		"workloads.Model":                models,
		"workloads.Message.type":         strs(workloads.MessageProgress, workloads.MessageResult, workloads.MessageError),
		"workloads.MaxLoadResult.reason": strs(workloads.ReasonErrorRatio, workloads.ReasonP99Latency, workloads.ReasonConnectionErrors, workloads.ReasonMaxUsers, workloads.ReasonDuration, workloads.ReasonAborted),
		"workloads.Result.arm":           strs("rest", "graphql"),
		"report.Report.status":           status,
		"report.Report.verdict":          verdicts,
		"report.Report.arms":             strs("rest,graphql", "rest,rest", "graphql,graphql"),
		"report.Report.gate":             strs(kpi.GateInterval),
		"report.Round.verdict":           judged,
		"report.Check.group":             strs("memory", "delivery", "errors", "rest", "absolute"),
		"report.Phase.arm":               strs("rest", "graphql"),
		"report.Phase.model":             models,
		"report.TargetInfo.kind":         strs(report.TargetBuiltin, report.TargetAttach, report.TargetCommand, report.TargetKubernetes),
		"report.ReplicaEvent.event":      strs("restarted", "left", "joined"),
		"report.TargetInfo.scrape_via":   strs(config.ScrapeViaAPIServer, config.ScrapeViaPodIP),
		"kpi.Result.delta_unit":          strs("points", "percent"),
		"kpi.Result.gate":                strs(kpi.GateInterval),
		"kpi.Knee.attribution":           strs(kpi.KneeTarget, kpi.KneeDriverBound, kpi.KneeMachineBound, kpi.KneeNone),
		"report.Comparison.verdict":      judged,
		"report.Comparison.old_status":   status,
		"report.Comparison.new_status":   status,
		"report.CompareRow.metric":       strs("throughput_rps", "cpu_us_per_request", "alloc_bytes_per_request", "gc_percent", "latency_p99_ms", "heap_live_bytes_max", "cpu_per_request_vs_control"),
		"report.CompareRow.unit":         strs("req/s", "µs", "B", "%", "ms", "×"),
		"report.CompareRow.change_unit":  strs("points", "percent"),
		"run.SoakReport.status":          strs(report.StatusRunning, report.StatusComplete, run.SoakStatusStopped, report.StatusAborted),
		"run.SoakReport.verdict":         verdicts,
		"kpi.DriftRule.basis":            strs(kpi.BasisAbsolute, kpi.BasisRelativeToControl),
		"run.Cycle.verdict":              strs(string(kpi.OutcomePass), string(kpi.OutcomeFail), string(kpi.OutcomeInconclusive), string(kpi.OutcomeAborted)),
	}
}

// consts pins the version fields: a document of another version is not
// described by this schema.
func consts() map[string]any {
	return map[string]any{
		"report.Report.schema_version":     report.SchemaVersion,
		"run.SoakReport.schema_version":    run.SoakSchemaVersion,
		"report.Comparison.schema_version": report.CompareSchemaVersion,
		"workloads.Message.version":        workloads.MessageVersion,
	}
}

// overrides are the schemas of types that encode themselves (MarshalJSON)
// or that JSON Schema has a format for.
func overrides() map[reflect.Type]map[string]any {
	num := map[string]any{"type": "number"}
	nullNum := map[string]any{"type": []any{"number", "null"}}
	return map[reflect.Type]map[string]any{
		reflect.TypeFor[time.Time](): {"type": "string", "format": "date-time"},
		// Histogram bounds: numbers, with the infinities as strings.
		reflect.TypeFor[report.Bounds](): {"type": "array", "items": map[string]any{"anyOf": []any{num, map[string]any{"enum": []any{"-Inf", "+Inf"}}}}},
		// kpi.Interval.MarshalJSON: an infinite end (too few rounds) is null.
		reflect.TypeFor[kpi.Interval](): {
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"center", "lo", "hi", "n", "confidence", "se", "df"},
			"properties": map[string]any{
				"center": num, "lo": nullNum, "hi": nullNum, "n": map[string]any{"type": "integer", "minimum": 0},
				"confidence": num, "se": num, "df": num,
			},
		},
	}
}

// encodesAs gives the struct each self-encoding type writes itself as
// (its MarshalJSON marshals that struct): its schema is that struct's, under
// the type's own name.
func encodesAs() map[reflect.Type]reflect.Type {
	return map[reflect.Type]reflect.Type{
		// kpi.Result.MarshalJSON: an arm not measured is null, pass absent.
		reflect.TypeFor[kpi.Result](): reflect.TypeFor[kpi.ResultWire](),
	}
}

// nullables are the types whose MarshalJSON writes the struct as it is,
// except the listed fields, written as null when not measured.
func nullables() map[reflect.Type][]string {
	return map[reflect.Type][]string{
		reflect.TypeFor[profiles.Summary]():  profiles.NullableFields(),
		reflect.TypeFor[report.PerRequest](): {"cpu_us", "alloc_bytes", "alloc_objects", "gc_cycles_per_10k"},
		// report.Check.MarshalJSON: a check not measured has a null value and no pass.
		reflect.TypeFor[report.Check](): {"value"},
		// run.Cycle.MarshalJSON: a figure the cycle did not measure is null.
		reflect.TypeFor[run.Cycle](): run.CycleNullableFields(),
	}
}

// structFields are t's fields, for a method-less copy of t (reflect.StructOf).
func structFields(t reflect.Type) []reflect.StructField {
	out := make([]reflect.StructField, t.NumField())
	for i := range out {
		out[i] = t.Field(i)
	}
	return out
}

// generate builds schema name from its Go types; used holds the enums and
// consts that matched a field.
func generate(name string) (out []byte, used map[string]bool, err error) {
	doc, ok := documents()[name]
	if !ok {
		return nil, nil, fmt.Errorf("no document for schema %q", name)
	}
	g := &generator{defs: map[string]any{}, enums: enums(), consts: consts(), overrides: overrides(), seen: map[string]bool{}}
	root := g.schema(doc.root)
	if g.err != nil {
		return nil, nil, g.err
	}
	top := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         schemas.ID(name),
		"title":       doc.title,
		"description": doc.description + " Generated from the Go types (go test ./schemas -update).",
		"$ref":        root["$ref"],
		"$defs":       g.defs,
	}
	if name == schemas.Driver {
		constrainMessage(g.defs)
	}
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return append(b, '\n'), g.used, nil
}

// constrainMessage says which payload each driver message type carries.
func constrainMessage(defs map[string]any) {
	m := defs["workloads.Message"].(map[string]any)
	rule := func(typ, field string) any {
		return map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": typ}}},
			"then": map[string]any{"required": []any{field}},
		}
	}
	m["allOf"] = []any{
		rule(workloads.MessageProgress, "progress"),
		rule(workloads.MessageWindow, "window"),
		rule(workloads.MessageResult, "result"),
		rule(workloads.MessageError, "error"),
	}
}

// generator turns Go types into JSON Schema as encoding/json writes them.
type generator struct {
	defs      map[string]any
	enums     map[string][]any
	consts    map[string]any
	overrides map[reflect.Type]map[string]any
	seen      map[string]bool
	used      map[string]bool
	err       error
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// defName names a type in $defs: "report.Phase".
func defName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[i+1:]
	}
	return pkg + "." + t.Name()
}

// schema returns t's schema: a $ref for a named struct, inline otherwise.
func (g *generator) schema(t reflect.Type) map[string]any {
	if o, ok := g.overrides[t]; ok {
		return o
	}
	if fs, ok := nullables()[t]; ok {
		name := defName(t)
		if !g.seen[name] {
			g.seen[name] = true
			o := g.object(reflect.StructOf(structFields(t)), name)
			for _, f := range fs {
				p := o["properties"].(map[string]any)
				if s, ok := p[f]; ok {
					p[f] = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
				}
			}
			o["additionalProperties"] = false
			if t == reflect.TypeFor[report.Check]() { // pass is left out when not measured
				o["required"] = slices.DeleteFunc(o["required"].([]any), func(v any) bool { return v == "pass" })
			}
			g.defs[name] = o
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	if w, ok := encodesAs()[t]; ok {
		name := defName(t)
		if !g.seen[name] {
			g.seen[name] = true
			g.defs[name] = g.object(w, name)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	if t.Kind() != reflect.Pointer && (t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)) {
		g.fail(fmt.Errorf("type %s encodes itself: give it an override", t))
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		s := map[string]any{"type": "string"}
		if t.Name() != "" && t.PkgPath() != "" {
			if e, ok := g.enums[defName(t)]; ok {
				g.use(defName(t))
				s["enum"] = e
			}
		}
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		items := g.schema(t.Elem())
		if t.Elem().Kind() == reflect.Pointer { // a nil element is written as null (a gap in a column)
			items = map[string]any{"anyOf": []any{items, map[string]any{"type": "null"}}}
		}
		s := map[string]any{"type": "array", "items": items}
		if t.Kind() == reflect.Array {
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
		}
		return s
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := defName(t)
		if t.Name() == "" {
			return g.object(t, name)
		}
		if !g.seen[name] {
			g.seen[name] = true
			g.defs[name] = g.object(t, name)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	g.fail(fmt.Errorf("type %s (%s) has no JSON form", t, t.Kind()))
	return map[string]any{}
}

// field is one JSON property of a struct.
type field struct {
	name     string
	typ      reflect.Type
	optional bool
}

// fields lists t's JSON properties as encoding/json writes them: embedded
// structs without a name flattened, "-" skipped, omitempty and omitzero
// optional.
func fields(t reflect.Type, optional bool) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, fields(et, optional || f.Type.Kind() == reflect.Pointer)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		o := optional || slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		out = append(out, field{name: name, typ: f.Type, optional: o})
	}
	return out
}

// object is the schema of struct t, defined as name.
func (g *generator) object(t reflect.Type, name string) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, f := range fields(t, false) {
		key := name + "." + f.name
		s := g.schema(f.typ)
		if e, ok := g.enums[key]; ok {
			g.use(key)
			s = map[string]any{"type": "string", "enum": e}
		}
		if c, ok := g.consts[key]; ok {
			g.use(key)
			s = map[string]any{"const": c}
		}
		if !f.optional && nullable(f.typ) {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[f.name] = s
		if !f.optional {
			required = append(required, f.name)
		}
	}
	// Objects soakd defines allow no other property; another module's
	// (a histogram snapshot) may grow fields when it is upgraded.
	return map[string]any{"type": "object", "additionalProperties": !strings.HasPrefix(t.PkgPath(), module+"/") && t.PkgPath() != module,
		"required": required, "properties": props}
}

// module is soakd's module path: its types are the structures it defines.
const module = "github.com/soakd/soakd"

// nullable reports whether encoding/json writes null for t's zero value:
// a nil pointer, slice, map or interface that encodes nothing itself.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		return true
	case reflect.Slice, reflect.Map:
		return !t.Implements(jsonMarshaler)
	}
	return false
}

func (g *generator) use(key string) {
	if g.used == nil {
		g.used = map[string]bool{}
	}
	g.used[key] = true
}

func (g *generator) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}
