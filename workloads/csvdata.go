package workloads

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/soakd/soakd/internal/fsutil"
)

// MaxCSVBytes bounds a CSV data file and MaxCSVRowBytes one row of it (a
// line, or the lines of a row whose quoted field holds line breaks):
// `csv: /dev/zero` grew the daemon by 300 MB/s before, since its first
// line never ends. MaxCSVBytes also keeps the driver's offsets in uint32.
const (
	MaxCSVBytes    = 256 << 20
	MaxCSVRowBytes = 1 << 20
)

// CSVFile is what the daemon found when it validated a CSV data file, sent
// in the phase spec instead of the file's values: the driver reads the
// file itself, and refuses it unless it is still this file.
type CSVFile struct {
	// Rows is the number of data rows, after the header line.
	Rows int `json:"rows"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// ModTime is the file's modification time, in ns since the Unix epoch.
	ModTime int64 `json:"mtime_ns"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string `json:"sha256"`
}

// ValidateCSVFile checks the CSV data file at path for columns without
// keeping its values (see scanCSV) and returns what the driver needs to
// find it again. Errors name lines and counts, never the file's text: they
// may reach whoever gave the path.
func ValidateCSVFile(path string, columns []string) (CSVFile, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return CSVFile{}, fmt.Errorf("cannot read the CSV file: %w", err)
	}
	defer f.Close()
	id, err := fileStamp(f)
	if err != nil {
		return CSVFile{}, fmt.Errorf("cannot read the CSV file: %w", err)
	}
	rows, sum, err := scanCSV(f, columns, nil)
	if err != nil {
		return CSVFile{}, fmt.Errorf("%s: %w", path, err)
	}
	id.Rows, id.SHA256 = rows, hex.EncodeToString(sum[:])
	return id, nil
}

// fileStamp returns f's size and modification time.
func fileStamp(f *os.File) (CSVFile, error) {
	fi, err := f.Stat()
	if err != nil {
		return CSVFile{}, err
	}
	return CSVFile{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

// csvField is where one field's text lies in a CSV document: its first
// byte (an opening quote when quoted) and its length, quotes included.
type csvField struct {
	off int64
	n   int
}

// scanCSV streams a CSV document whose first record names its columns,
// parsed by encoding/csv (the same values as ever): each of columns must be
// one, every row well formed and at most MaxCSVRowBytes, the document at
// most MaxCSVBytes with 1 … MaxDataValues rows, and the columns' values
// free of line breaks and NUL (no header or URL may carry them). It keeps
// no values: fn, when not nil, gets each row's fields of columns (reused
// between calls). It returns the row count and the document's SHA-256.
func scanCSV(r io.Reader, columns []string, fn func(row int, fields []csvField)) (rows int, sum [32]byte, err error) {
	in := newCSVInput(r)
	if rows, err = scan(in, columns, fn); err == nil {
		copy(sum[:], in.sum.Sum(nil))
	}
	return rows, sum, err
}

// scan is scanCSV reading from in.
func scan(in *csvInput, columns []string, fn func(row int, fields []csvField)) (rows int, err error) {
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return 0, errors.New("the file is empty; its first line must name the columns")
	}
	if err != nil {
		return 0, csvError(err)
	}
	idx := make([]int, len(columns))
	for i, c := range columns {
		if idx[i] = slices.Index(head, c); idx[i] < 0 {
			return 0, fmt.Errorf("line 1 names no column %q (it names %d columns)", c, len(head))
		}
	}
	fields := make([]csvField, len(columns))
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, csvError(err)
		}
		if rows == MaxDataValues {
			line, _ := cr.FieldPos(0)
			return 0, fmt.Errorf("line %d: more than %d rows", line, MaxDataValues)
		}
		for i, c := range idx {
			v := rec[c]
			line, col := cr.FieldPos(c)
			if strings.ContainsAny(v, "\r\n\x00") {
				return 0, fmt.Errorf("line %d: the value of column %q holds a line break or NUL, which no header or URL may carry", line, columns[i])
			}
			off := in.lineStart(line) + int64(col-1)
			n := len(v)
			if in.byteAt(off) == '"' {
				n += 2 + strings.Count(v, `"`)
			}
			fields[i] = csvField{off: off, n: n}
		}
		if fn != nil {
			fn(rows, fields)
		}
		rows++
		last, _ := cr.FieldPos(len(rec) - 1)
		in.forget(last) // the next row begins after it
	}
	if rows == 0 {
		return 0, errors.New("no rows after the header line")
	}
	return rows, nil
}

// csvError words an encoding/csv error with its line first.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("line %d: %w", pe.Line, pe.Err)
	}
	return err
}

// csvInput is the reader under encoding/csv. It bounds the document and
// its rows, hashes what it reads, and keeps the bytes and line starts of
// the lines not yet forgotten (the row being parsed and the reader's read
// ahead), so that a field's line and column (csv.Reader.FieldPos) give its
// offset. What it keeps is bounded by MaxCSVRowBytes and the read ahead.
type csvInput struct {
	r      io.Reader
	sum    hash.Hash
	off    int64   // bytes read
	line   int     // the line of the next byte, from 1
	quoted bool    // inside a quoted field: an odd number of quotes since the row began
	rowAt  int64   // where the current row began
	first  int     // the line starts[0] begins
	starts []int64 // where lines first, first+1, … begin
	base   int64   // the offset of kept[0]
	kept   []byte  // the bytes from base to off
}

// newCSVInput returns a csvInput reading r.
func newCSVInput(r io.Reader) *csvInput {
	return &csvInput{r: r, sum: sha256.New(), starts: []int64{0}, first: 1}
}

func (in *csvInput) Read(p []byte) (int, error) {
	if rest := MaxCSVBytes + 1 - in.off; int64(len(p)) > rest {
		p = p[:rest] // one byte beyond the bound tells it is passed
	}
	n, err := in.r.Read(p)
	for i, c := range p[:n] {
		switch c {
		case '"':
			in.quoted = !in.quoted
		case '\n':
			in.line++
			at := in.off + int64(i) + 1
			in.starts = append(in.starts, at)
			if !in.quoted {
				in.rowAt = at
			}
		}
		if in.off+int64(i)+1-in.rowAt > MaxCSVRowBytes {
			return 0, fmt.Errorf("line %d: a row is longer than %d KiB: is it a CSV file?", in.line+1, MaxCSVRowBytes>>10)
		}
	}
	in.sum.Write(p[:n])
	in.kept = append(in.kept, p[:n]...)
	in.off += int64(n)
	if in.off > MaxCSVBytes {
		return 0, fmt.Errorf("the file is larger than %d MiB, soakd's bound on CSV data", MaxCSVBytes>>20)
	}
	return n, err
}

// lineStart returns the offset where line begins; the line is one not
// forgotten, and already read.
func (in *csvInput) lineStart(line int) int64 { return in.starts[line-in.first] }

// byteAt returns the byte at off, one not forgotten, or 0 at the end.
func (in *csvInput) byteAt(off int64) byte {
	if off-in.base >= int64(len(in.kept)) {
		return 0
	}
	return in.kept[off-in.base]
}

// forget drops what lies before line (no later row starts before it),
// moving what is kept down once the dropped part is the larger, so each
// byte is moved a bounded number of times.
func (in *csvInput) forget(line int) {
	k := line - in.first
	if k <= 0 || k >= len(in.starts) {
		return
	}
	drop := int(in.starts[k] - in.base)
	if 2*k < len(in.starts) && 2*drop < len(in.kept) {
		return
	}
	in.starts = in.starts[:copy(in.starts, in.starts[k:])]
	in.kept = in.kept[:copy(in.kept, in.kept[drop:])]
	in.first, in.base = line, in.base+int64(drop)
}

// ErrCSVChanged is wrapped by the driver's error for a CSV data file that
// is no longer the file the daemon validated.
var ErrCSVChanged = errors.New("do not edit data files during a run")

// csvFile is a CSV data file the driver reads values from on demand: an
// index of where each row's fields of the columns lie, the values read
// with ReadAt (the page cache keeps that cheap), so the driver holds
// 8 bytes a value instead of the value.
type csvFile struct {
	path    string
	f       *os.File
	want    CSVFile
	columns []string
	spans   []csvSpan // row r's field of columns[c] at spans[r*len(columns)+c]
	broken  atomic.Bool
}

// csvSpan is a csvField in 8 bytes (MaxCSVBytes keeps it in range).
type csvSpan struct{ off, n uint32 }

// openCSVFile opens the CSV data file at path, checks it is still the file
// want describes (size and modification time at once, the SHA-256 and the
// row count after the pass that indexes columns), and returns it indexed.
func openCSVFile(path string, columns []string, want CSVFile) (*csvFile, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the CSV file: %w", err)
	}
	c := &csvFile{path: path, f: f, want: want, columns: columns}
	if err := c.unchanged(); err != nil {
		f.Close()
		return nil, err
	}
	if want.Rows < 1 || want.Rows > MaxDataValues {
		f.Close()
		return nil, fmt.Errorf("%s: %d rows in the spec, want 1 … %d", path, want.Rows, MaxDataValues)
	}
	c.spans = make([]csvSpan, 0, want.Rows*len(columns))
	rows, sum, err := scanCSV(f, columns, func(row int, fields []csvField) {
		if row < want.Rows {
			for _, fd := range fields {
				c.spans = append(c.spans, csvSpan{uint32(fd.off), uint32(fd.n)})
			}
		}
	})
	switch {
	case err != nil:
		err = fmt.Errorf("%s: %w", path, err)
	case rows != want.Rows:
		err = c.changed("its row count")
	case hex.EncodeToString(sum[:]) != want.SHA256:
		err = c.changed("its SHA-256")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// changed is the error for a file that is no longer the one validated;
// what says how it differs.
func (c *csvFile) changed(what string) error {
	return fmt.Errorf("%s changed after the run started (%s): %w", c.path, what, ErrCSVChanged)
}

// unchanged checks the file's size and modification time against the
// spec's, and that every value read from it was whole.
func (c *csvFile) unchanged() error {
	now, err := fileStamp(c.f)
	switch {
	case err != nil:
		return fmt.Errorf("cannot read the CSV file %s: %w", c.path, err)
	case now.Size != c.want.Size:
		return c.changed("its size")
	case now.ModTime != c.want.ModTime:
		return c.changed("its modification time")
	case c.broken.Load():
		return c.changed("a value read from it was not the one indexed")
	}
	return nil
}

// csvRow is one user's copy of the row it last read from a csvFile.
type csvRow struct {
	buf  []byte
	vals [][]byte // by column of the file
}

// maxRowRead is the widest span of a row read with one ReadAt; a wider
// row's fields are read one by one.
const maxRowRead = 64 << 10

// read fills r with row k's values. A read that fails or does not give a
// value as indexed (the file changed) gives empty values and marks the
// file broken, which fails the phase (unchanged).
func (c *csvFile) read(r *csvRow, k int64) {
	n := len(c.columns)
	spans := c.spans[int(k)*n : int(k+1)*n]
	if r.vals == nil {
		r.vals = make([][]byte, n)
	}
	lo, hi := spans[0].off, spans[0].off+spans[0].n
	for _, s := range spans[1:] {
		lo, hi = min(lo, s.off), max(hi, s.off+s.n)
	}
	ok := true
	if hi-lo <= maxRowRead {
		r.buf = slices.Grow(r.buf[:0], int(hi-lo))[:hi-lo]
		ok = c.readAt(r.buf, lo)
		for i, s := range spans {
			r.vals[i] = r.buf[s.off-lo : s.off-lo+s.n]
		}
	} else {
		total := 0
		for _, s := range spans {
			total += int(s.n)
		}
		r.buf = slices.Grow(r.buf[:0], total)[:total]
		at := 0
		for i, s := range spans {
			r.vals[i] = r.buf[at : at+int(s.n)]
			ok = ok && c.readAt(r.vals[i], s.off)
			at += int(s.n)
		}
	}
	for i, v := range r.vals {
		if r.vals[i], ok = unquoteField(v, ok); !ok {
			break
		}
	}
	if !ok {
		c.broken.Store(true)
		for i := range r.vals {
			r.vals[i] = r.vals[i][:0]
		}
	}
}

// readAt fills b from off, reporting whether it could.
func (c *csvFile) readAt(b []byte, off uint32) bool {
	for {
		_, err := c.f.ReadAt(b, int64(off))
		if !errors.Is(err, syscall.EINTR) {
			return err == nil
		}
	}
}

// unquoteField returns a field's value from its text (in place): a quoted
// field loses its quotes and its doubled quotes are single. ok false, or a
// text that is not a field's as indexed, gives false.
func unquoteField(raw []byte, ok bool) ([]byte, bool) {
	if !ok || bytes.ContainsAny(raw, "\r\n\x00") {
		return raw, false
	}
	if len(raw) == 0 || raw[0] != '"' {
		return raw, bytes.IndexByte(raw, '"') < 0
	}
	if len(raw) < 2 || raw[len(raw)-1] != '"' {
		return raw, false
	}
	in, out := raw[1:len(raw)-1], raw[:0]
	for i := 0; i < len(in); i++ {
		if in[i] == '"' {
			if i+1 == len(in) || in[i+1] != '"' {
				return raw, false
			}
			i++
		}
		out = append(out, in[i])
	}
	return out, true
}

// csvData is the CSV data files of a phase, opened by the driver.
type csvData struct {
	files map[string]*csvFile
}

// openCSVData opens and indexes every CSV file the operations of p's
// groups read, each once with the columns they read.
func openCSVData(p Phase) (*csvData, error) {
	want := map[string]CSVFile{}
	cols := map[string][]string{}
	for _, g := range p.Groups {
		for _, d := range p.Operations[g.Operation].Data {
			if d.CSV == "" || d.File == nil {
				continue
			}
			if prev, ok := want[d.CSV]; ok && prev != *d.File {
				return nil, fmt.Errorf("%s: two descriptions of the file in one spec", d.CSV)
			}
			want[d.CSV] = *d.File
			if !slices.Contains(cols[d.CSV], d.Column) {
				cols[d.CSV] = append(cols[d.CSV], d.Column)
			}
		}
	}
	data := &csvData{files: map[string]*csvFile{}}
	for _, path := range slices.Sorted(maps.Keys(want)) {
		slices.Sort(cols[path])
		f, err := openCSVFile(path, cols[path], want[path])
		if err != nil {
			data.close()
			return nil, err
		}
		data.files[path] = f
	}
	return data, nil
}

// column returns the file at path and the index of column among the
// columns it was opened with; nil when it was not.
func (d *csvData) column(path, column string) (*csvFile, int) {
	if d == nil {
		return nil, -1
	}
	f := d.files[path]
	if f == nil {
		return nil, -1
	}
	return f, slices.Index(f.columns, column)
}

// check reports the first file that changed since it was opened.
func (d *csvData) check() error {
	if d == nil {
		return nil
	}
	for _, path := range slices.Sorted(maps.Keys(d.files)) {
		if err := d.files[path].unchanged(); err != nil {
			return err
		}
	}
	return nil
}

// close closes the files.
func (d *csvData) close() {
	if d == nil {
		return
	}
	for _, f := range d.files {
		f.f.Close()
	}
}
