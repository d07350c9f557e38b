package control

import (
	"bytes"
	"testing"
)

// FuzzDecodeDonutBody checks the PUT body decoder never panics, returns a nil
// body exactly when it returns an error, and only ever accepts valid donuts.
func FuzzDecodeDonutBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","flavor":"VANILLA"}`,
		`{"name":"x","flavor":"MINT"}`,
		`{"name":"","flavor":"CHOCOLATE"}`,
		`{"name":"x","flavor":"VANILLA","id":"1"}`,
		`{"name":"x","flavor":"VANILLA"} {}`,
		`{"name":5}`,
		`null`,
		`[]`,
		`{"name":"\u0000","flavor":"STRAWBERRY"}`,
		``,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := decodeDonutBody(bytes.NewReader(in))
		switch {
		case err != nil && b != nil:
			t.Errorf("decodeDonutBody(%q) = %+v with error %v, want a nil body", in, b, err)
		case err == nil && b == nil:
			t.Errorf("decodeDonutBody(%q) = nil without an error", in)
		case err == nil && (b.Name == "" || !b.Flavor.Valid()):
			t.Errorf("decodeDonutBody(%q) accepted invalid %+v", in, b)
		case err != nil && err.Error() == "":
			t.Errorf("decodeDonutBody(%q) gave an empty error message", in)
		}
	})
}
