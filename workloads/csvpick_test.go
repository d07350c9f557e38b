package workloads

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pickCSV is a CSV file of varied rows: quoted fields with commas and
// escaped quotes, a CRLF line, a blank line (encoding/csv skips it), an
// empty value, and a multi-line field in a column no variable reads.
func pickCSV() string {
	var b strings.Builder
	b.WriteString("id,note,other\n")
	for i := range 997 {
		switch i % 7 {
		case 0:
			fmt.Fprintf(&b, "%d,\"quoted, with \"\"quotes\"\" %d\",x\n", i, i)
		case 1:
			fmt.Fprintf(&b, "\"%d\",plain-%d,\"multi\nline\"\r\n", i, i)
		case 2:
			fmt.Fprintf(&b, "%d,,y\n\n", i)
		case 3:
			fmt.Fprintf(&b, "%d,%s,z\r\n", i, strings.Repeat("n", i%300))
		default:
			fmt.Fprintf(&b, "%d,note %d/ü?&=,\"\"\n", i, i)
		}
	}
	return b.String()
}

// pickedRequests builds n requests for each of users 0..4 of an operation
// whose id and note come from one CSV file (random or round-robin) and
// returns a digest of their URLs and headers.
func pickedRequests(t *testing.T, pick string, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.csv")
	if err := os.WriteFile(path, []byte(pickCSV()), 0o644); err != nil {
		t.Fatal(err)
	}
	def := OperationDef{
		REST: &RESTDef{Method: "GET", Path: "/items/{{id}}?note={{note}}&n={{n}}"},
		Data: map[string]DataDef{
			"id":   {CSV: path, Column: "id", Pick: pick},
			"note": {CSV: path, Column: "note", Pick: pick},
			"n":    {Range: []int64{1, 50}},
		},
		Headers: map[string]string{"X-Note": "{{note}}"},
	}
	op := compileResolvedCSV(t, def)
	h := sha256.New()
	for index := range 5 {
		u := newUser(op, Phase{Seed: 42, Groups: []UserGroup{{Operation: "op"}}}, "b", index, userSlot{})
		for i := range n {
			c := u.next(i)
			fmt.Fprintf(h, "%s %s|", c.url, c.headers[1].value)
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestCSVPicksAreUnchanged: for a fixed seed, the values picked from a CSV
// file are the same request for request as when the daemon sent every
// value in the spec (the digests were computed by that code).
func TestCSVPicksAreUnchanged(t *testing.T) {
	for pick, want := range map[string]string{
		PickRandom:     "d66a1b4c4e67d857ee7c1cbb82f657b5e1b24583d62ec23edcd500eab4c3108b",
		PickRoundRobin: "167e5af87a6b0164ec861d3dbd040576c93c238e076bce91a1238d41d3d10184",
	} {
		if got := pickedRequests(t, pick, 400); got != want {
			t.Errorf("%s: requests digest %s, want %s", pick, got, want)
		}
	}
}

// compileResolvedCSV compiles def as the driver does, its CSV data
// validated the way the daemon validates it.
func compileResolvedCSV(t testing.TB, def OperationDef) *compiledOp {
	t.Helper()
	cols := map[string][]string{}
	for _, d := range def.Data {
		if d.CSV != "" {
			cols[d.CSV] = append(cols[d.CSV], d.Column)
		}
	}
	for v, d := range def.Data {
		if d.CSV != "" {
			id, err := ValidateCSVFile(d.CSV, cols[d.CSV])
			if err != nil {
				t.Fatal(err)
			}
			d.File = &id
			def.Data[v] = d
		}
	}
	data, err := openCSVData(Phase{Groups: []UserGroup{{Operation: "op"}}, Operations: map[Operation]OperationDef{"op": def}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(data.close)
	op, err := compileOperation("op", def, endpoints{rest: "http://h", graphql: "http://h/graphql"}, nil, data)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// csvFixture is a CSV file written for a test and validated.
type csvFixture struct {
	path string
	file CSVFile
}

// writeCSV writes doc to a file and validates it for columns.
func writeCSV(t testing.TB, doc string, columns ...string) csvFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.csv")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := ValidateCSVFile(path, columns)
	if err != nil {
		t.Fatal(err)
	}
	return csvFixture{path, id}
}

// BenchmarkPickCSV is the driver's cost of building one request whose
// header takes a 260 B value from a 200,000-row CSV file, picked at
// random: what per-request cost the way CSV values reach the driver adds.
func BenchmarkPickCSV(b *testing.B) {
	path := filepath.Join(b.TempDir(), "items.csv")
	var sb strings.Builder
	sb.WriteString("id,note\n")
	for i := range 200_000 {
		fmt.Fprintf(&sb, "%d,n%07d%s\n", i, i, strings.Repeat("x", 252))
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	def := OperationDef{
		REST: &RESTDef{Method: "GET", Path: "/items/{{id}}"},
		Data: map[string]DataDef{
			"id":   {CSV: path, Column: "id"},
			"note": {CSV: path, Column: "note"},
		},
		Headers: map[string]string{"X-Note": "{{note}}"},
	}
	op := compileResolvedCSV(b, def)
	u := newUser(op, Phase{Seed: 1, Groups: []UserGroup{{Operation: "op"}}}, "b", 0, userSlot{})
	u.next(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		u.next(i)
	}
}
