package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRunsShowsSchedules: soakd runs prints a line per schedule (name,
// cron and zone, profile, next slot, last outcome) and a line per missed
// or skipped recent slot before the runs; a daemon with no schedules, or
// one older than GET /v1/schedules (404), gets the run list alone, as
// before.
func TestRunsShowsSchedules(t *testing.T) {
	const runsJSON = `{"runs":[{"id":"20261130T010000Z-1","profile":"quick","status":"complete","verdict":"pass","started_at":"2026-11-30T01:00:00Z","baseline":false,"dir":"/d"}]}`
	const schedulesJSON = `{"schedules":[
 {"name":"nightly","cron":"0 2 * * *","timezone":"Europe/Berlin","profile":"quick","kind":"run","catch_up":false,
  "next":"2026-12-01T02:00:00+01:00","last_slot":"2026-11-30T02:00:00+01:00","last_run":"20261130T010000Z-1","pending":false,"recent":[
   {"slot":"2026-11-30T02:00:00+01:00","outcome":"started","run":"20261130T010000Z-1"},
   {"slot":"2026-11-29T02:00:00+01:00","outcome":"skipped","run":"20261129T005000Z-3","reason":"busy: run 20261129T005000Z-3 is in progress and the slot of 2026-11-28T02:00:00+01:00 is already pending"},
   {"slot":"2026-11-27T02:00:00+01:00","outcome":"missed","reason":"daemon not running"}]},
 {"name":"hourly","cron":"@hourly","timezone":"UTC","profile":"seed","kind":"run","catch_up":true,"next":"2026-11-30T11:00:00Z","pending":true,"recent":[]}]}`
	runs := "ID                  PROFILE  STATUS    VERDICT  STARTED               BASELINE\n" +
		"20261130T010000Z-1  quick    complete  pass     2026-11-30T01:00:00Z  \n"
	for _, tc := range []struct {
		name      string
		schedules string // "" answers 404
		want      string
	}{
		{"schedules", schedulesJSON, "" +
			"SCHEDULE  CRON                       PROFILE  NEXT                       LAST\n" +
			"nightly   0 2 * * * (Europe/Berlin)  quick    2026-12-01T02:00:00+01:00  started 2026-11-30T02:00:00+01:00 (run 20261130T010000Z-1)\n" +
			"hourly    @hourly (UTC)              seed     2026-11-30T11:00:00Z       none yet; a slot is pending\n" +
			"schedule nightly: skipped 2026-11-29T02:00:00+01:00 (run 20261129T005000Z-3): busy: run 20261129T005000Z-3 is in progress and the slot of 2026-11-28T02:00:00+01:00 is already pending\n" +
			"schedule nightly: missed 2026-11-27T02:00:00+01:00: daemon not running\n" +
			"\n" + runs},
		{"no schedules", `{"schedules":[]}`, runs},
		{"an older daemon", "", runs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.URL.Path == "/v1/runs":
					_, _ = w.Write([]byte(runsJSON))
				case r.URL.Path == "/v1/history":
					_, _ = w.Write([]byte(`{"data_dir":"/d","read_only":false}`))
				case r.URL.Path == "/v1/schedules" && tc.schedules != "":
					_, _ = w.Write([]byte(tc.schedules))
				default:
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"error":{"message":"no route for ` + r.URL.Path + `"}}`))
				}
			}))
			defer srv.Close()
			var out, errb strings.Builder
			if code := Run(mustRead(t, "config.yaml"), []string{"runs", "--api", srv.URL}, &out, &errb); code != 0 {
				t.Fatalf("soakd runs: exit %d\n%s", code, errb.String())
			}
			if out.String() != tc.want {
				t.Errorf("soakd runs printed\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}
