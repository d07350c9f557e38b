package api

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Schedules is the fake's one schedule: nightly in Berlin, pending, with
// a started and a skipped slot.
func (f *fakeRunner) Schedules(context.Context) ([]Schedule, error) {
	ber, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		return nil, err
	}
	last := time.Date(2026, 3, 1, 2, 0, 0, 0, ber)
	return []Schedule{{
		Name: "nightly", Cron: "0 2 * * *", Timezone: "Europe/Berlin", Profile: "quick", Kind: "run",
		Next: last.AddDate(0, 0, 1), LastSlot: last, LastRun: "run-1", Pending: true,
		Recent: []SlotOutcome{
			{Slot: last, Outcome: SlotSkipped, Run: "run-1", Reason: "busy"},
			{Slot: last.AddDate(0, 0, -1), Outcome: SlotStarted, Run: "run-1"},
		},
	}, {
		Name: "hourly", Cron: "@hourly", Timezone: "UTC", Profile: "quick", Kind: "run", Next: f.now.Add(time.Hour),
	}}, nil
}

// TestSchedulesRoute: GET /v1/schedules answers the runner's schedules in
// their JSON shape (times in each schedule's zone, last_slot and last_run
// left out before the first, recent [] rather than null), behind the
// token, 405 for another method; Client.Schedules reads them back.
func TestSchedulesRoute(t *testing.T) {
	srv, f := newServer(t, testToken, nil)
	if code, _, _ := do(t, srv, http.MethodGet, "/v1/schedules", "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/schedules without the token: %d, want 401", code)
	}
	code, hdr, body := do(t, srv, http.MethodGet, "/v1/schedules", testToken, nil)
	want := `{"schedules":[` +
		`{"name":"nightly","cron":"0 2 * * *","timezone":"Europe/Berlin","profile":"quick","kind":"run","catch_up":false,` +
		`"next":"2026-03-02T02:00:00+01:00","last_slot":"2026-03-01T02:00:00+01:00","last_run":"run-1","pending":true,"recent":[` +
		`{"slot":"2026-03-01T02:00:00+01:00","outcome":"skipped","run":"run-1","reason":"busy"},` +
		`{"slot":"2026-02-28T02:00:00+01:00","outcome":"started","run":"run-1"}]},` +
		`{"name":"hourly","cron":"@hourly","timezone":"UTC","profile":"quick","kind":"run","catch_up":false,` +
		`"next":"2026-03-01T13:00:00Z","pending":false,"recent":[]}]}` + "\n"
	if code != http.StatusOK || string(body) != want || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("GET /v1/schedules: %d %s\n%s\nwant 200\n%s", code, hdr.Get("Content-Type"), body, want)
	}
	if code, hdr, _ := do(t, srv, http.MethodPost, "/v1/schedules", testToken, nil); code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
		t.Errorf("POST /v1/schedules: %d, want 405 Allow: GET", code)
	}
	got, err := newClient(srv, testToken).Schedules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	all, _ := f.Schedules(t.Context())
	all[1].Recent = []SlotOutcome{}
	for i := range all {
		if !got[i].Next.Equal(all[i].Next) || !got[i].LastSlot.Equal(all[i].LastSlot) {
			t.Errorf("schedule %d's times: %v, %v, want %v, %v", i, got[i].Next, got[i].LastSlot, all[i].Next, all[i].LastSlot)
		}
		got[i].Next, got[i].LastSlot, all[i].Next, all[i].LastSlot = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		for j := range got[i].Recent {
			if !got[i].Recent[j].Slot.Equal(all[i].Recent[j].Slot) {
				t.Errorf("schedule %d, recent %d: %v, want %v", i, j, got[i].Recent[j].Slot, all[i].Recent[j].Slot)
			}
			got[i].Recent[j].Slot, all[i].Recent[j].Slot = time.Time{}, time.Time{}
		}
	}
	if !reflect.DeepEqual(got, all) {
		t.Errorf("Client.Schedules: %+v, want %+v", got, all)
	}
}

// TestSchedulesClientOlderDaemon: a daemon without the route answers 404,
// which the client reports as ErrNotFound so the CLI can leave the
// schedules out.
func TestSchedulesClientOlderDaemon(t *testing.T) {
	srv, _ := newServer(t, "", nil)
	cl := newClient(srv, "")
	cl.BaseURL = srv.URL + "/older" // no route below it
	_, err := cl.Schedules(t.Context())
	if ae, ok := errors.AsType[*APIError](err); !ok || ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "cannot list the schedules") || !errors.Is(err, ErrNotFound) {
		t.Errorf("Schedules from a daemon without the route: %v, want a 404 matching ErrNotFound", err)
	}
}
