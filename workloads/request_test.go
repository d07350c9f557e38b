package workloads

import (
	"strings"
	"testing"
)

// TestValidateBytes checks that validate's byte comparison never passes a
// body the full decode would not, and that every body it does not recognise
// gets the full decode's verdict.
func TestValidateBytes(t *testing.T) {
	read := `{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`
	write := `{"data":{"addOrUpdateDonut":{"id":"w3","name":"w3#0000000001@0001764500000123456789","flavor":"VANILLA"}}}`
	cases := []struct {
		name   string
		body   string
		writes bool
		fast   bool   // passes on its bytes
		class  string // validate's verdict
	}{
		{"read", read, false, true, ""},
		{"read with a trailing newline", read + "\n", false, true, ""},
		{"write", write, true, true, ""},
		{"read checked as a write", read, true, false, ClassPayloadMismatch},
		{"write checked as a read", write, false, false, ClassPayloadMismatch},
		{"other name", strings.Replace(read, "donut-7", "any name at all", 1), false, true, ""},
		{"empty name", strings.Replace(read, "donut-7", "", 1), false, true, ""},
		{"escaped name", strings.Replace(read, "donut-7", `a\"b`, 1), false, false, ""},
		{"control character in the name", strings.Replace(read, "donut-7", "a\x01b", 1), false, false, ClassDecodeError},
		{"wrong id", strings.Replace(read, `"id":"7"`, `"id":"8"`, 1), false, false, ClassPayloadMismatch},
		{"id with a longer prefix", strings.Replace(read, `"id":"7"`, `"id":"77"`, 1), false, false, ClassPayloadMismatch},
		{"wrong flavor", strings.Replace(read, "STRAWBERRY", "VANILLA", 1), false, false, ClassPayloadMismatch},
		{"flavor with a suffix", strings.Replace(read, "STRAWBERRY", "STRAWBERRYX", 1), false, false, ClassPayloadMismatch},
		{"errors after data", strings.TrimSuffix(read, "}") + `,"errors":[{"message":"boom"}]}`, false, false, ClassGraphQLError},
		{"errors before data", `{"errors":[{"message":"boom"}],` + read[1:], false, false, ClassGraphQLError},
		{"null errors", strings.TrimSuffix(read, "}") + `,"errors":null}`, false, false, ""},
		{"empty errors", strings.TrimSuffix(read, "}") + `,"errors":[]}`, false, false, ""},
		{"truncated", read[:len(read)-1], false, false, ClassDecodeError},
		{"truncated in the flavor", read[:len(read)-8], false, false, ClassDecodeError},
		{"empty", "", false, false, ClassDecodeError},
		{"trailing garbage", read + "x", false, false, ClassDecodeError},
		{"two values", read + read, false, false, ClassDecodeError},
		{"spaced", strings.ReplaceAll(read, ":", ": "), false, false, ""},
		{"reordered", `{"data":{"donut":{"flavor":"STRAWBERRY","id":"7","name":"donut-7"}}}`, false, false, ""},
		{"extra field", `{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY","x":1}}}`, false, false, ""},
		{"null donut", `{"data":{"donut":null}}`, false, false, ClassPayloadMismatch},
		{"no data", `{}`, false, false, ClassPayloadMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantID, wantFlavor := "7", "STRAWBERRY"
			if c.writes {
				wantID, wantFlavor = "w3", "VANILLA"
			}
			b := []byte(c.body)
			if got := canonical(b, c.writes, []byte(wantID), wantFlavor); got != c.fast {
				t.Errorf("canonical: got %v, want %v", got, c.fast)
			}
			class, msg := validate(b, c.writes, []byte(wantID), wantFlavor)
			if class != c.class {
				t.Errorf("validate: got %q (%s), want %q", class, msg, c.class)
			}
			// The bytes never decide otherwise than the full decode.
			if slow, _ := decodeValidate(b, c.writes, []byte(wantID), wantFlavor); slow != class {
				t.Errorf("validate says %q, the full decode %q", class, slow)
			}
		})
	}
}

// FuzzValidate checks on any body that validate and the full decode agree.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`), false)
	f.Add([]byte(`{"data":{"addOrUpdateDonut":{"id":"7","name":"x","flavor":"STRAWBERRY"}}} `), true)
	f.Fuzz(func(t *testing.T, body []byte, writes bool) {
		fast, _ := validate(body, writes, []byte("7"), "STRAWBERRY")
		slow, _ := decodeValidate(body, writes, []byte("7"), "STRAWBERRY")
		if fast != slow {
			t.Fatalf("%q: validate %q, full decode %q", body, fast, slow)
		}
	})
}

func TestValidateAllocs(t *testing.T) {
	body := []byte(`{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`)
	id := []byte("7")
	if n := testing.AllocsPerRun(100, func() {
		if c, m := validate(body, false, id, "STRAWBERRY"); c != "" {
			t.Fatal(m)
		}
	}); n != 0 {
		t.Errorf("validate of a canonical body: %v allocations, want 0", n)
	}
}
