package graph

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzWebsocketGuard feeds arbitrary client frames, split on newlines,
// through the guard's decisions (judgeFrame, then admit for a subscribe, as
// NextReader does) on both protocols. Whatever arrives: no panic; never more
// active operations than the cap; every close reason fits a websocket close
// frame (123 bytes); and the id gqlgen is given, once turned back, is the
// client's.
func FuzzWebsocketGuard(f *testing.F) {
	for _, s := range []string{
		`{"type":"connection_init"}` + "\n" + `{"id":"a","type":"subscribe","payload":{"query":"subscription { onDonutUpdated(id: \"1\") { id } }"}}` + "\n" + `{"id":"a","type":"subscribe"}`,
		`{"type":"connection_init","payload":{}}` + "\n" + `{"id":"1","type":"start"}` + "\n" + `{"id":"2","type":"start"}` + "\n" + `{"id":"3","type":"start"}` + "\n" + `{"id":"4","type":"start"}`,
		`{"type":"connection_init"}` + "\n" + `{"id":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé","type":"subscribe"}` + "\n" + `{"id":"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé","type":"subscribe"}`,
		`{"type":"ping"}`,
		`{"type":"connection_init","payload":"x"}`,
		`{"id":"x","type":"complete"}`,
		`not json`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	const maxActive = 3
	f.Fuzz(func(t *testing.T, frames []byte, legacy bool) {
		c := &guardedConn{legacy: legacy, maxActive: maxActive}
		for _, data := range bytes.Split(frames, []byte("\n")) {
			v := judgeFrame(c.legacy, c.initialised, false, data)
			if v.code == 0 && v.start != "" {
				var alias string
				v, alias = c.admit(v.start)
				if v.code == 0 {
					b, err := withID(data, alias)
					if err != nil {
						t.Fatalf("withID on a frame judgeFrame accepted: %v", err)
					}
					var m struct {
						ID string `json:"id"`
					}
					if err := json.Unmarshal(b, &m); err != nil || m.ID != alias {
						t.Fatalf("the aliased frame carries id %q, want %q", m.ID, alias)
					}
				}
			}
			if v.code == 0 && v.stop != "" {
				delete(c.active, v.stop) // as if the server completed it
			}
			if v.init {
				c.initialised = true
			}
			if len(v.reason) > 123 {
				t.Fatalf("close reason of %d bytes: %q", len(v.reason), v.reason)
			}
			if len(c.active) > maxActive {
				t.Fatalf("%d operations active, cap %d", len(c.active), maxActive)
			}
			if v.code != 0 {
				return // the connection is closed
			}
		}
	})
}
