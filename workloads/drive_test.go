package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// drive runs Drive with in against target through an io.Pipe read by
// ReadMessages, and returns the messages and Drive's error.
func drive(ctx context.Context, t *testing.T, in []byte, target string) ([]Message, error) {
	t.Helper()
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var driveErr error
	wg.Go(func() {
		driveErr = Drive(ctx, bytes.NewReader(in), pw, target)
		pw.Close()
	})
	var msgs []Message
	err := ReadMessages(context.Background(), pr, func(m Message) error {
		msgs = append(msgs, m)
		return nil
	})
	wg.Wait()
	if err != nil {
		t.Fatalf("ReadMessages: %v", err)
	}
	return msgs, driveErr
}

func TestDriveRoundTrip(t *testing.T) {
	fake := newFakeTarget(50)
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	// At least 50 x 25 ms of think time: the run lasts over a second, so at
	// least one progress line is due.
	p := testPhase(UserGroup{Operation: RESTGet, Users: 2, Iterations: 50})
	p.Think = Think{Min: 25 * time.Millisecond, Max: 30 * time.Millisecond}
	in, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := drive(context.Background(), t, in, srv.URL)
	if err != nil {
		t.Fatalf("Drive: %v", err)
	}
	if len(msgs) < 2 {
		t.Fatalf("got %d messages, want progress lines then a result", len(msgs))
	}
	var last, timed int64
	for i, m := range msgs[:len(msgs)-1] {
		if m.Type != MessageProgress || m.Progress == nil {
			t.Fatalf("message %d: got %+v, want progress", i, m)
		}
		if m.Progress.Requests < last || m.Progress.ElapsedSeconds <= 0 {
			t.Errorf("progress %d goes backwards or has no time: %+v", i, m.Progress)
		}
		last = m.Progress.Requests
		if l := m.Progress.IntervalLatency; l != nil {
			timed += l.Count
		}
	}
	if timed == 0 || timed > last {
		t.Errorf("progress lines carry the latency of %d requests, want some and at most the %d completed", timed, last)
	}
	res := msgs[len(msgs)-1]
	if res.Type != MessageResult || res.Result == nil {
		t.Fatalf("last message: got %+v, want a result", res)
	}
	if res.Result.Requests != 100 || res.Result.Errors != 0 || res.Result.Aborted {
		t.Errorf("result: got %d requests %d errors aborted %v, want 100, 0, false", res.Result.Requests, res.Result.Errors, res.Result.Aborted)
	}
}

func TestDriveBadSpec(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		msgs, err := drive(context.Background(), t, []byte(in), "http://127.0.0.1:1")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("spec %s: got error %v, want one containing %q", in, err, want)
		}
		if len(msgs) != 1 || msgs[0].Type != MessageError || !strings.Contains(msgs[0].Error, want) {
			t.Errorf("spec %s: got messages %+v, want one error line containing %q", in, msgs, want)
		}
	}
	f(`{"name":"x","arm":"rest","users":[]}`, "users: at least one user group")
	f(`{"nmae":"x"}`, `unknown field "nmae"`)
	f(`not json`, "cannot read phase")
	f(``, "cannot read phase")
	valid := `{"name":"x","arm":"rest","users":[{"operation":"rest-put","users":1,"iterations":1}],"request_timeout":1000000000}`
	f2, err := drive(context.Background(), t, []byte(valid), "127.0.0.1:1")
	if err == nil || len(f2) != 1 || f2[0].Type != MessageError {
		t.Errorf("bad target: got %v and %+v, want an error line and an error", err, f2)
	}
}

func TestDriveCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := newFakeTarget(50)
	var once sync.Once
	fake.seen = func(Operation) { once.Do(cancel) }
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	in, err := json.Marshal(testPhase(UserGroup{Operation: RESTPut, Users: 2, Iterations: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := drive(ctx, t, in, srv.URL)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Drive: got %v, want context.Canceled", err)
	}
	if n := len(msgs); n == 0 || msgs[n-1].Type != MessageResult || !msgs[n-1].Result.Aborted {
		t.Errorf("got messages %+v, want an aborted result last", msgs)
	}
}

// failingWriter fails every write, like a pipe whose reader went away.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestDriveBrokenOutputAborts(t *testing.T) {
	fake := newFakeTarget(50)
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	// Over 100 s of think time unless the failed progress write aborts the run.
	p := testPhase(UserGroup{Operation: RESTGet, Users: 1, Iterations: 10000})
	p.Think = Think{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	in, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	err = Drive(context.Background(), bytes.NewReader(in), failingWriter{}, srv.URL)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("got %v, want io.ErrClosedPipe", err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if n := fake.counts[RESTGet]; n >= 10000 {
		t.Errorf("server saw %d requests, want the run aborted early", n)
	}
}

func TestReadMessages(t *testing.T) {
	f := func(name, in, want string) {
		t.Helper()
		err := ReadMessages(context.Background(), strings.NewReader(in), func(Message) error { return nil })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, want)
		}
	}
	f("malformed", `{"type":"progress","progress":{}}`+"\n{oops\n", "cannot decode")
	f("unknown type", `{"type":"metrics"}`, `unknown message type "metrics"`)
	f("another version", `{"version":2,"type":"error","error":"boom"}`, "message version 2")
	f("progress without body", `{"type":"progress"}`, "without progress")
	f("result without body", `{"type":"result"}`, "without result")
	f("empty interval latency", `{"type":"progress","progress":{"interval_latency":{"count":0}}}`, "count 0")
	f("unordered interval latency", `{"type":"progress","progress":{"interval_latency":{"count":3,"p50_ms":5,"p90_ms":4,"p99_ms":6,"max_ms":7}}}`, "not ordered")
	f("empty error", `{"type":"error"}`, "without error")
	f("bad histogram", `{"type":"result","result":{"operations":[{"operation":"rest-get","histogram":{"LowestTrackableValue":1,"HighestTrackableValue":60000000,"SignificantFigures":3,"Counts":[-1]}}]}}`, "invalid histogram")
	f("missing histogram", `{"type":"result","result":{"operations":[{"operation":"rest-get"}]}}`, "has no histogram")
	f("bad service histogram", `{"type":"result","result":{"open":{"service_histogram":{"LowestTrackableValue":1,"HighestTrackableValue":60000000,"SignificantFigures":3,"Counts":[-1]}}}}`, "service histogram is invalid")

	var got []string
	in := `{"type":"progress","progress":{"requests":1}}` + "\n" + `{"type":"error","error":"boom"}` + "\n"
	if err := ReadMessages(context.Background(), strings.NewReader(in), func(m Message) error {
		got = append(got, m.Type)
		return nil
	}); err != nil || strings.Join(got, ",") != "progress,error" {
		t.Errorf("got %v %v, want progress,error and no error", got, err)
	}
	stop := errors.New("stop")
	if err := ReadMessages(context.Background(), strings.NewReader(in), func(Message) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn error: got %v, want %v", err, stop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ReadMessages(ctx, strings.NewReader(in), func(Message) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestDriveOtherModels(t *testing.T) {
	fake := newFakeTarget(50)
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	openP := Phase{
		Name: "open", Arm: "rest", Model: Open,
		Groups:   []UserGroup{{Operation: RESTGet}},
		Duration: 300 * time.Millisecond, Rate: 100, MaxInFlight: 8,
		RequestTimeout: time.Second, Operations: donutOps(50),
	}
	rampP := Phase{
		Name: "max", Arm: "rest", Model: Ramping,
		Groups:         []UserGroup{{Operation: RESTGet}},
		Think:          Think{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond},
		Duration:       1500 * time.Millisecond,
		Ramp:           Ramp{Start: 1, Step: 1, Every: 100 * time.Millisecond, Max: 4},
		Failure:        Failure{Window: time.Second, MaxErrorRatio: 0.5},
		RequestTimeout: time.Second, Operations: donutOps(50),
	}
	for _, p := range []Phase{openP, rampP} {
		in, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := drive(context.Background(), t, in, srv.URL)
		if err != nil {
			t.Fatalf("%s: Drive: %v", p.Model, err)
		}
		r := msgs[len(msgs)-1].Result
		if r == nil || r.Model != p.Model || r.Requests == 0 || r.Errors != 0 {
			t.Fatalf("%s: got last message %+v, want a result of that model without errors", p.Model, msgs[len(msgs)-1])
		}
		if (p.Model == Open) != (r.Open != nil) || (p.Model == Ramping) != (r.MaxLoad != nil) {
			t.Errorf("%s: got open %v max_load %v, want only the model's own part", p.Model, r.Open, r.MaxLoad)
		}
	}
}
