package workloads

import (
	"bytes"
	"encoding/csv"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// csvCorpus is CSV documents of every shape encoding/csv accepts or
// refuses: quoted fields with escaped quotes, commas and line breaks (in a
// column not read, or read, which is refused), CRLF, blank lines, a last
// line without a newline, a trailing CR at the end, empty fields, a bare
// quote, a wrong field count, an unterminated quote.
var csvCorpus = []string{
	"id,name\n1,a\n\"2\",\"b,c\"\n",
	"id,name\r\n1,\"say \"\"hi\"\"\"\r\n2,\"\"\r\n",
	"id,name\n\n1,a\n\n\n2,b\n\n",
	"id,name\n1,a\n2,b",
	"id,name\n1,a\n2,b\r",
	"id,name\n1,\n,\n\"\",x\n",
	"name,id,other\n\"a\nb\",1,x\n",
	"other,id,name\n\"multi\r\nline\",1,\"q\"\"\"\n\"x\ny\nz\",2,\"\"\"\"\n",
	"id,name\n1,a\"b\n",
	"id,name\n1\n",
	"id,name\n1,\"open\n",
	"id,name\n1,\"x\"y\n",
	"id,name\n1,\"é, ü\"\n2,日本\n",
	"id,id,name\n1,2,a\n",
	"id,name\n  1 , b \n",
	"\"id\",\"name\"\n1,2\n",
	"id,name\n1,a\x00b\n",
	"id,name\n1,a\rb\n",
}

// indexedColumn reads column of doc as the driver does: scanCSV's fields,
// each value cut from the document and unquoted.
func indexedColumn(doc []byte, column string) ([]string, error) {
	var got []string
	var bad error
	_, _, err := scanCSV(bytes.NewReader(doc), []string{column}, func(_ int, fields []csvField) {
		f := fields[0]
		v, ok := unquoteField(slices.Clone(doc[f.off:f.off+int64(f.n)]), true)
		if !ok && bad == nil {
			bad = errors.New("a field's text is not its value's")
		}
		got = append(got, string(v))
	})
	if err == nil {
		err = bad
	}
	return got, err
}

// csvColumn is column of doc as encoding/csv reads it, and whether the
// index must accept it: encoding/csv accepts doc, it names the column,
// has rows, and no value of the column holds a line break or NUL.
func csvColumn(doc []byte, column string) ([]string, bool) {
	recs, err := csv.NewReader(bytes.NewReader(doc)).ReadAll()
	if err != nil || len(recs) < 2 {
		return nil, false
	}
	c := slices.Index(recs[0], column)
	if c < 0 {
		return nil, false
	}
	var out []string
	for _, r := range recs[1:] {
		if strings.ContainsAny(r[c], "\r\n\x00") {
			return nil, false
		}
		out = append(out, r[c])
	}
	return out, true
}

// checkLikeEncodingCSV fails t unless the index reads column of doc
// exactly as encoding/csv does, and refuses it exactly when it must.
func checkLikeEncodingCSV(t *testing.T, doc []byte, column string) {
	t.Helper()
	want, ok := csvColumn(doc, column)
	got, err := indexedColumn(doc, column)
	switch {
	case ok && err != nil:
		t.Errorf("%q column %s: refused (%v), encoding/csv reads %q", doc, column, err, want)
	case !ok && err == nil:
		t.Errorf("%q column %s: read %q, want it refused", doc, column, got)
	case ok && !slices.Equal(got, want):
		t.Errorf("%q column %s: got %q, encoding/csv reads %q", doc, column, got, want)
	}
}

// TestCSVIndexMatchesEncodingCSV: over a varied corpus, the values read
// through the index are encoding/csv's, and what it refuses is refused.
func TestCSVIndexMatchesEncodingCSV(t *testing.T) {
	for _, doc := range csvCorpus {
		for _, column := range []string{"id", "name", "other", "nope"} {
			checkLikeEncodingCSV(t, []byte(doc), column)
		}
	}
}

// TestScanCSVErrors: each refusal names its line or count, never the
// file's text.
func TestScanCSVErrors(t *testing.T) {
	for doc, want := range map[string]string{
		"":                              "the file is empty",
		"id,name\n":                     "no rows after the header line",
		"id,name\n1,a\n2\n":             "line 3: wrong number of fields",
		"id,name\n1,a\n2,\"b\n":         "line 3",
		"id,name\n1,\"x\"secret\n":      "line 2",
		"id,secret\n1,\"a\nsecret\"\n":  `line 2: the value of column "secret" holds a line break or NUL`,
		"id\nsecret\x00value\n":         "line 2: the value of column \"id\" holds a line break or NUL",
		"hidden,name\nhidden,1\n":       `line 1 names no column "id" (it names 2 columns)`,
		"id,name\n1,a\nsecret\"x\",b\n": "line 3",
	} {
		column := "id"
		if strings.HasPrefix(doc, "id,secret") {
			column = "secret"
		}
		_, _, err := scanCSV(strings.NewReader(doc), []string{column}, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", doc, err, want)
			continue
		}
		if msg := strings.ReplaceAll(err.Error(), `"secret"`, ""); strings.Contains(msg, "secret") || strings.Contains(msg, "hidden") || strings.Contains(msg, "value") && !strings.Contains(msg, "the value of") {
			t.Errorf("%q: the error quotes the file: %v", doc, err)
		}
	}
	many := "id\n" + strings.Repeat("1\n", MaxDataValues+1)
	if _, _, err := scanCSV(strings.NewReader(many), []string{"id"}, nil); err == nil || !strings.Contains(err.Error(), "more than 1000000 rows") {
		t.Errorf("%d rows: %v", MaxDataValues+1, err)
	}
}

// TestCSVBounds: /dev/zero as CSV data is refused, and a file whose line
// never ends stops at the row bound instead of growing without one.
func TestCSVBounds(t *testing.T) {
	if _, err := ValidateCSVFile("/dev/zero", []string{"id"}); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("/dev/zero: %v", err)
	}
	long := filepath.Join(t.TempDir(), "long.csv")
	if err := os.WriteFile(long, bytes.Repeat([]byte("x"), MaxCSVRowBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateCSVFile(long, []string{"id"}); err == nil || !strings.Contains(err.Error(), "longer than 1024 KiB") {
		t.Errorf("an endless line: %v", err)
	}
	// A quoted field that never closes makes one row of every line after it.
	open := "id\n\"" + strings.Repeat("line\n", MaxCSVRowBytes/5+10)
	if _, _, err := scanCSV(strings.NewReader(open), []string{"id"}, nil); err == nil || !strings.Contains(err.Error(), "a row is longer than 1024 KiB") {
		t.Errorf("an endless quoted field: %v", err)
	}
}

// TestScanCSVKeepsLittle: scanning 40 MB of rows keeps about one row and
// the reader's read-ahead, not the document.
func TestScanCSVKeepsLittle(t *testing.T) {
	row := "1,\"" + strings.Repeat("v", 200) + "\",\"two\nlines\"\n"
	doc := "id,note,other\n" + strings.Repeat(row, 200_000)
	in := newCSVInput(strings.NewReader(doc))
	rows, err := scan(in, []string{"note"}, nil)
	if err != nil || rows != 200_000 {
		t.Fatalf("%d rows, %v", rows, err)
	}
	if cap(in.kept) > 64<<10 || cap(in.starts) > 4<<10 {
		t.Errorf("kept %d bytes and %d line starts of a %d MB document", cap(in.kept), cap(in.starts), len(doc)>>20)
	}
}

// TestCSVFileChanged: the driver refuses a file that is not the one the
// daemon validated (another size, modification time, or the same of both
// with other bytes), and a phase during which the file was rewritten
// fails, saying so.
func TestCSVFileChanged(t *testing.T) {
	items := writeCSV(t, "id,name\n1,a\n2,b\n", "id", "name")
	cols := []string{"id", "name"}
	if f, err := openCSVFile(items.path, cols, items.file); err != nil {
		t.Fatalf("the file as validated: %v", err)
	} else {
		f.f.Close()
	}
	stamp := time.Unix(0, items.file.ModTime)
	for doc, want := range map[string]string{
		"id,name\n1,a\n2,bc\n": "(its size)",
		"id,name\n1,a\n2,b\n":  "(its modification time)",
		"id,name\n1,a\n2,c\n":  "(its SHA-256)",
	} {
		if err := os.WriteFile(items.path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if want == "(its SHA-256)" {
			if err := os.Chtimes(items.path, stamp, stamp); err != nil {
				t.Fatal(err)
			}
		}
		_, err := openCSVFile(items.path, cols, items.file)
		if err == nil || !errors.Is(err, ErrCSVChanged) || !strings.Contains(err.Error(), "items.csv changed after the run started "+want+": do not edit data files during a run") {
			t.Errorf("%q: got %v, want %s", doc, err, want)
		}
	}

	// Rewritten while the phase runs: the phase fails.
	items = writeCSV(t, "id\n1\n2\n", "id")
	var rewritten atomic.Bool
	w := newWire(t, func(r recorded) (int, string) {
		if !rewritten.Swap(true) {
			if err := os.WriteFile(items.path, []byte("id\n3\n4\n"), 0o644); err != nil {
				t.Error(err)
			}
			// The same size, whole values: the modification time tells.
		}
		return http.StatusOK, "{}"
	})
	p := Phase{Name: "p", Arm: "rest", Run: "r", Seed: 1, RequestTimeout: 5 * time.Second,
		Groups: []UserGroup{{Operation: "op", Users: 1, Iterations: 3}},
		Operations: map[Operation]OperationDef{"op": {
			REST: &RESTDef{Path: "/items/{{id}}"},
			Data: map[string]DataDef{"id": {CSV: items.path, Column: "id", File: &items.file}},
		}}}
	_, err := Run(t.Context(), w.URL, p, NewClient(1, 5*time.Second), nil)
	if !errors.Is(err, ErrCSVChanged) || !strings.Contains(err.Error(), "phase p: "+items.path+" changed after the run started") {
		t.Errorf("a file rewritten during the phase: %v", err)
	}
}

// TestUnquoteField: a field's text gives encoding/csv's value, and a text
// no field could have (the file changed under the index) is refused.
func TestUnquoteField(t *testing.T) {
	for raw, want := range map[string]string{`abc`: "abc", `""`: "", `"a""b"`: `a"b`, `"a,b"`: "a,b", `""""`: `"`} {
		if got, ok := unquoteField([]byte(raw), true); !ok || string(got) != want {
			t.Errorf("%s: got %q %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`"abc`, `a"b`, `"a"b"`, "\"a\nb\"", "a\rb", `"`} {
		if _, ok := unquoteField([]byte(raw), true); ok {
			t.Errorf("%q: accepted", raw)
		}
	}
}

// FuzzReadCSVColumn: any document gives no panic, and the values the index
// reads are encoding/csv's for the chosen column whenever encoding/csv
// accepts the document (and the index refuses it exactly when it must).
// Memory is bounded by construction (TestCSVBounds, TestScanCSVKeepsLittle).
func FuzzReadCSVColumn(f *testing.F) {
	for _, doc := range csvCorpus {
		f.Add([]byte(doc), uint8(0))
		f.Add([]byte(doc), uint8(1))
	}
	f.Fuzz(func(t *testing.T, doc []byte, pick uint8) {
		column := "id"
		if recs, err := csv.NewReader(bytes.NewReader(doc)).Read(); err == nil && len(recs) > 0 {
			column = recs[int(pick)%len(recs)]
		}
		checkLikeEncodingCSV(t, doc, column)
	})
}
