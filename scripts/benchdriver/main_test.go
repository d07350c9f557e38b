package main

import (
	"strings"
	"testing"
	"time"
)

const wrkOK = `Running 8s test @ http://127.0.0.1:40000
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   301.10us  120.00us   5.00ms   90.00%
    Req/Sec   13.48k     1.00k   15.00k    70.00%
  107844 requests in 8.00s, 20.00MB read
Requests/sec:  13480.50
Transfer/sec:      2.50MB
`

func TestParseWrk(t *testing.T) {
	n, err := parseWrk(wrkOK)
	if err != nil || n != 107844 {
		t.Fatalf("got %d, %v; want 107844", n, err)
	}
	for name, out := range map[string]string{
		"no count":      "Running 8s test\n",
		"socket errors": wrkOK + "  Socket errors: connect 0, read 1, write 0, timeout 0\n",
		"status errors": wrkOK + "  Non-2xx or 3xx responses: 12\n",
		"zero requests": strings.Replace(wrkOK, "107844 requests", "0 requests", 1),
	} {
		if _, err := parseWrk(out); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The wrk script sends what the driver sends: the same path or body around
// a random id in 1..donuts, and the same headers.
func TestWrkScript(t *testing.T) {
	rest := wrkScript(restGet, 1000)
	gql := wrkScript(graphqlQuery, 1000)
	for _, want := range []string{`"/api/donuts/" .. math.random(1000)`, `"Baggage"`, `"Accept"`} {
		if !strings.Contains(rest, want) {
			t.Errorf("rest-get script lacks %s:\n%s", want, rest)
		}
	}
	for _, want := range []string{gqlBodyStart, gqlBodyEnd, `"POST", "/graphql"`, `"Content-Type"`, "math.random(1000)"} {
		if !strings.Contains(gql, want) {
			t.Errorf("graphql-query script lacks %s:\n%s", want, gql)
		}
	}
}

func TestTable(t *testing.T) {
	got := table([]measurement{
		{op: restGet, round: 1, tool: "soakd drive", requests: 1000, cpu: 30 * time.Millisecond},
		{op: restGet, round: 1, tool: "wrk", requests: 2000, cpu: 20 * time.Millisecond},
	})
	for _, want := range []string{
		"| rest-get | 1 | soakd drive | 1000 | 0.03 | 30.00 | 3.00× |",
		"| rest-get | 1 | wrk | 2000 | 0.02 | 10.00 | 1.00× |",
		"median of 1 rounds: 3.00×",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
