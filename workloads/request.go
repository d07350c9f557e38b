package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Error classes counted in results. HTTP statuses other than 200 are counted as
// "http_<code>" (for example "http_500").
const (
	// ClassTimeout: no complete response within Phase.RequestTimeout.
	ClassTimeout = "timeout"
	// ClassConnectionRefused: nothing listens at the target (the server is down).
	ClassConnectionRefused = "connection_refused"
	// ClassConnectionReset: the server closed or reset the connection mid-request.
	ClassConnectionReset = "connection_reset"
	// ClassGraphQLError: a 200 response carrying a top-level GraphQL "errors" array.
	ClassGraphQLError = "graphql_error"
	// ClassPayloadMismatch: a 200 response without the expected donut id and flavor.
	ClassPayloadMismatch = "payload_mismatch"
	// ClassDecodeError: a 200 response whose body is not JSON.
	ClassDecodeError = "decode_error"
	// ClassOther: any other failure to send or read a request.
	ClassOther = "other"
	// ClassDropped is, in a ramping-rate phase's failure window only, an
	// arrival the driver did not send because MaxInFlight requests were
	// in flight; it is counted as dropped, not as a request, everywhere else.
	ClassDropped = "dropped"
)

// The GraphQL documents sent, as seed 002's JMeter plans send them (one named
// operation per request, variables separate so the server's query cache hits).
const (
	queryDocument    = "query Donut($id: ID!) { donut(id: $id) { id name flavor } }"
	mutationDocument = "mutation UpdateDonut($donut: DonutInput!) { addOrUpdateDonut(donut: $donut) { id name flavor } }"
)

const (
	// maxResponseBytes bounds how much of one response body the driver reads;
	// expected bodies are under 200 bytes, so a larger one fails decoding.
	maxResponseBytes = 1 << 20
	// maxExampleBytes bounds one error example message.
	maxExampleBytes = 300
)

// user is one virtual user's prebuilt state. Only one goroutine at a time
// touches it -- the user's own (closed and ramping models) or the one holding
// its open-model slot -- so it sends one request at a time.
type user struct {
	index   int       // global index in the phase (start order)
	op      Operation // the operation every request sends
	group   int       // index in Phase.Groups
	iters   int       // requests to send; 0 sends until stopped
	rng     *rand.Rand
	donuts  int
	headers []header // never mutated after construction

	url      string // full URL, or for rest-get the prefix before the id
	writerID string
	wantID   []byte // writers: writerID, what every response must carry
	// writers: for each flavor index, the body before and after the donut
	// name, which carries EventName(writer, seq, send time) so that
	// subscribers can count and time the events it raises.
	bodies    [3][2][]byte
	okWrites  int64  // writers: successful writes, what subscribers must receive
	bodyStart []byte // graphql-query: the body before the id
	// Buffers reused by every request, grown on the first: the URL, the
	// body sent and the body received. An idle user has none.
	urlBuf, bodyBuf, resp []byte
	timer                 *time.Timer
}

// maxKeptBuffer is the largest response buffer a user keeps for its next request.
const maxKeptBuffer = 64 << 10

// call is one planned request and the payload it must return. Its slices
// point into its user's buffers, valid until the user's next request.
type call struct {
	method     string
	url        []byte
	headers    []header
	body       []byte
	wantID     []byte
	wantFlavor string
}

// newUser prebuilds everything about user index of the phase that does not
// change between its requests.
func newUser(p Phase, target *url.URL, index int, slot userSlot) (*user, error) {
	return newUserAt(p, endpointsOf(target), index, slot)
}

// newUserAt is newUser driven at ep.
func newUserAt(p Phase, ep endpoints, index int, slot userSlot) (*user, error) {
	g := p.Groups[slot.group]
	u := &user{
		index:  index,
		op:     g.Operation,
		group:  slot.group,
		iters:  g.Iterations,
		rng:    userRand(p.Seed, index),
		donuts: p.Donuts,
	}
	switch g.Operation {
	case RESTGet:
		u.url = ep.rest + "/api/donuts/"
	case RESTPut:
		u.url = ep.rest + "/api/donuts/" + url.PathEscape(writerID(index))
	case GraphQLQuery, GraphQLMutation:
		u.url = ep.graphql
	}
	u.headers = []header{{"Baggage", baggage(p)}, {"Accept", "application/json"}}
	if g.Operation != RESTGet {
		u.headers = append(u.headers, header{"Content-Type", "application/json"})
	}
	switch g.Operation {
	case GraphQLQuery:
		// Only the id varies; it is made of digits, so it needs no escaping.
		u.bodyStart = []byte(`{"query":` + strconv.Quote(queryDocument) + `,"operationName":"Donut","variables":{"id":"`)
	case RESTPut, GraphQLMutation:
		u.writerID = writerID(index)
		u.wantID = []byte(u.writerID)
		// The name is a placeholder split out of the marshalled body, so a
		// request only appends three slices.
		const placeholder = `\u0000` // how encoding/json writes the NUL name below
		for f := range u.bodies {
			var (
				b   []byte
				err error
			)
			d := donutJSON{ID: u.writerID, Name: "\x00", Flavor: flavorByIndex(f)}
			if g.Operation == RESTPut {
				b, err = json.Marshal(struct {
					Name   string `json:"name"`
					Flavor string `json:"flavor"`
				}{d.Name, d.Flavor})
			} else {
				b, err = json.Marshal(graphQLRequest{
					Query:         mutationDocument,
					OperationName: "UpdateDonut",
					Variables:     map[string]any{"donut": d},
				})
			}
			if err != nil {
				return nil, fmt.Errorf("cannot build request body: %w", err)
			}
			before, after, ok := bytes.Cut(b, []byte(placeholder))
			if !ok {
				return nil, fmt.Errorf("cannot build request body: no name placeholder in %s", b)
			}
			u.bodies[f] = [2][]byte{before, after}
		}
	}
	return u, nil
}

// graphQLRequest is the JSON body of a GraphQL POST request.
type graphQLRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// baggage returns the W3C baggage header value stamped on every request, so
// the target (for example a profiler) can label work by run, phase and arm.
func baggage(p Phase) string {
	return "soakd.run=" + baggageEscape(p.Run) +
		",soakd.phase=" + baggageEscape(p.Name) +
		",soakd.arm=" + baggageEscape(p.Arm)
}

// baggageEscape percent-encodes every byte of s that W3C Baggage does not
// allow in a value (anything outside baggage-octet: controls, space, '"', ',',
// ';', '\' and non-ASCII) and '%' itself, so decoders get s back exactly. Unlike
// url.QueryEscape it never turns a space into '+', which baggage decoders
// would keep literally.
func baggageEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > 0x20 && c < 0x7F && c != '"' && c != ',' && c != ';' && c != '\\' && c != '%' {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		b = append(b, '%', hex[c>>4], hex[c&0xF])
	}
	if b == nil {
		return s
	}
	return string(b)
}

// next returns the user's request for iteration i. Readers pick a seeded
// donut uniformly at random; writers write their own donut, cycling flavors.
// The call's slices live in the user's buffers, so building it allocates
// nothing once they have grown.
func (u *user) next(i int) call {
	if u.op == RESTGet {
		id := 1 + u.rng.IntN(u.donuts)
		u.urlBuf = append(u.urlBuf[:0], u.url...)
		u.urlBuf = strconv.AppendInt(u.urlBuf, int64(id), 10)
		return call{method: http.MethodGet, url: u.urlBuf, headers: u.headers,
			wantID: u.urlBuf[len(u.url):], wantFlavor: seedFlavor(id)}
	}
	if len(u.urlBuf) == 0 {
		u.urlBuf = append(u.urlBuf, u.url...)
	}
	c := call{method: http.MethodPost, url: u.urlBuf, headers: u.headers}
	switch u.op {
	case GraphQLQuery:
		id := 1 + u.rng.IntN(u.donuts)
		b := append(u.bodyBuf[:0], u.bodyStart...)
		b = strconv.AppendInt(b, int64(id), 10)
		u.bodyBuf = append(b, `"}}`...)
		c.body, c.wantID, c.wantFlavor = u.bodyBuf, u.bodyBuf[len(u.bodyStart):len(b)], seedFlavor(id)
	default: // writers
		f := (u.index + i) % 3
		if u.op == RESTPut {
			c.method = http.MethodPut
		}
		c.body, c.wantID, c.wantFlavor = u.writeBody(f, int64(i)+1), u.wantID, flavorByIndex(f)
	}
	return c
}

// writeBody is a writer's body for flavor index f, naming the donut
// EventName(writer, seq, now), built in u.bodyBuf.
func (u *user) writeBody(f int, seq int64) []byte {
	parts := u.bodies[f]
	b := append(u.bodyBuf[:0], parts[0]...)
	b = appendEventName(b, u.writerID, seq, time.Now())
	u.bodyBuf = append(b, parts[1]...)
	return u.bodyBuf
}

// outcome is what one request produced: its latency and, on failure, its
// error class and a message.
type outcome struct {
	sent    time.Time     // just before the request was handed to the client
	latency time.Duration // service time: from sent to the end of the body (or the failure)
	class   string        // "" on success
	message string
}

// do sends c with s, reads the whole response and validates it: status 200,
// then the body (see validate). Nothing cancels a request in flight, so an
// aborted phase lets it finish; timeout bounds it, from dialling or waiting
// for a connection to the end of the body. The latency runs from just before
// sending to the end of the body read.
func (u *user) do(s sender, timeout time.Duration, c call) outcome {
	start := time.Now()
	status, body, err := s.send(&c, timeout, u.resp)
	o := outcome{sent: start, latency: time.Since(start)}
	if cap(body) <= maxKeptBuffer {
		u.resp = body[:0]
	} else {
		u.resp = nil
	}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		o.class, o.message = ClassDecodeError, fmt.Sprintf("%s %s: response body over %d bytes", c.method, c.url, maxResponseBytes)
	case err != nil:
		o.class, o.message = classifyTransport(err), fmt.Sprintf("%s %s: %v", c.method, c.url, err)
	case status != http.StatusOK:
		o.class = "http_" + strconv.Itoa(status)
		o.message = fmt.Sprintf("%s %s: HTTP %d: %s", c.method, c.url, status, body)
	default:
		if o.class, o.message = validate(body, u.op.writes(), c.wantID, c.wantFlavor); o.class != "" {
			o.message = c.method + " " + string(c.url) + ": " + o.message
		}
	}
	return o
}

// donutJSON is a donut as the target returns it.
type donutJSON struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Flavor string `json:"flavor"`
}

// envelope is the response shape shared by both arms: the REST control group
// mimics GraphQL's {"data":{...}} so payload size is not a factor.
type envelope struct {
	Data *struct {
		Donut            *donutJSON `json:"donut"`
		AddOrUpdateDonut *donutJSON `json:"addOrUpdateDonut"`
	} `json:"data"`
	Errors json.RawMessage `json:"errors"`
}

// validate applies seed 002's assertions to a 200 response body: it decodes,
// carries no top-level GraphQL errors, and returns the expected donut (id and
// flavor) under data.donut for readers or data.addOrUpdateDonut for writers.
// It returns an empty class when the body passes.
//
// A body in the form both arms of the target write -- exactly
// {"data":{"donut":{"id":"<wantID>","name":"<name>","flavor":"<wantFlavor>"}}}
// (addOrUpdateDonut for writers), a name without quotes, backslashes or
// control characters, and nothing after it but whitespace -- passes on its
// bytes alone (see canonical); it is a body the decoding below would pass.
// Any other body is decoded, so that every verdict and message is the one a
// full decode gives.
func validate(body []byte, writes bool, wantID []byte, wantFlavor string) (class, message string) {
	if canonical(body, writes, wantID, wantFlavor) {
		return "", ""
	}
	return decodeValidate(body, writes, wantID, wantFlavor)
}

// decodeValidate is validate by a full decode of body.
func decodeValidate(body []byte, writes bool, wantID []byte, wantFlavor string) (class, message string) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return ClassDecodeError, fmt.Sprintf("cannot decode response %q: %v", body, err)
	}
	if e := bytes.TrimSpace(env.Errors); len(e) > 0 && !bytes.Equal(e, []byte("null")) && !bytes.Equal(e, []byte("[]")) {
		return ClassGraphQLError, fmt.Sprintf("response has errors: %s", e)
	}
	key := "donut"
	var got *donutJSON
	if env.Data != nil {
		got = env.Data.Donut
		if writes {
			key, got = "addOrUpdateDonut", env.Data.AddOrUpdateDonut
		}
	}
	switch {
	case got == nil:
		return ClassPayloadMismatch, fmt.Sprintf("response has no data.%s: %s", key, body)
	case got.ID != string(wantID) || got.Flavor != wantFlavor:
		return ClassPayloadMismatch, fmt.Sprintf("got donut id %q flavor %q, want id %q flavor %q", got.ID, got.Flavor, wantID, wantFlavor)
	}
	return "", ""
}

// canonical reports whether body is exactly the compact JSON the target
// answers a successful read (writes false) or write with: the expected id and
// flavor under data.donut (data.addOrUpdateDonut) with any name between them,
// nothing else, and only whitespace after it. Such a body has no errors and
// decodes to that id and flavor, so validate passes it without decoding; any
// byte out of place sends validate to its full decode. It does not allocate.
func canonical(body []byte, writes bool, wantID []byte, wantFlavor string) bool {
	const (
		readPrefix  = `{"data":{"donut":{"id":"`
		writePrefix = `{"data":{"addOrUpdateDonut":{"id":"`
		nameKey     = `","name":"`
		flavorKey   = `","flavor":"`
		end         = `"}}}`
	)
	prefix := readPrefix
	if writes {
		prefix = writePrefix
	}
	b, ok := cutPrefix(body, prefix)
	if !ok || !jsonSafe(wantID) || !jsonSafe(wantFlavor) {
		return false
	}
	if b, ok = cutPrefix(b, wantID); !ok {
		return false
	}
	if b, ok = cutPrefix(b, nameKey); !ok {
		return false
	}
	// The name: any run of bytes that need no escaping in a JSON string
	// (encoding/json accepts invalid UTF-8 there, replacing it).
	i := 0
	for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
		i++
	}
	if b, ok = cutPrefix(b[i:], flavorKey); !ok {
		return false
	}
	if b, ok = cutPrefix(b, wantFlavor); !ok {
		return false
	}
	if b, ok = cutPrefix(b, end); !ok {
		return false
	}
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// cutPrefix returns b without prefix and true, or b and false when b does not
// start with prefix.
func cutPrefix[S ~string | ~[]byte](b []byte, prefix S) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != string(prefix) {
		return b, false
	}
	return b[len(prefix):], true
}

// jsonSafe reports whether s is written as itself inside a JSON string: no
// quote, backslash, control character or non-ASCII byte (which an encoder may
// escape), so that comparing bytes is comparing values.
func jsonSafe[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// classifyTransport maps an error from sending a request or reading its body
// to an error class.
func classifyTransport(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, fasthttp.ErrNoFreeConns), // waited RequestTimeout for a connection
		errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return ClassConnectionReset
	}
	return ClassOther
}

// truncate shortens an example message to at most maxExampleBytes bytes.
func truncate(s string) string {
	if len(s) <= maxExampleBytes {
		return s
	}
	return s[:maxExampleBytes] + "..."
}
