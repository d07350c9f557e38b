package kpi

import (
	"strings"
	"testing"
)

func TestImplausibleCPU(t *testing.T) {
	for _, c := range []struct {
		requests, cpu float64
		bad           bool
	}{
		{2300 * 4, 0, true},   // a sleep beside a server at 2,300 req/s for 4 s
		{10000, 0.009, true},  // 0.9 µs each
		{10000, 0.010, false}, // 1 µs each
		{10000, 1.2, false},   // 120 µs each, a real server
		{999, 0, false},       // too few requests to tell
		{0, 0, false},
	} {
		why := ImplausibleCPU(c.requests, c.cpu)
		if (why != "") != c.bad {
			t.Errorf("ImplausibleCPU(%v, %v) = %q, want bad %v", c.requests, c.cpu, why, c.bad)
		}
		if c.bad && !strings.Contains(why, "not the process that answered") {
			t.Errorf("reason %q does not say why", why)
		}
	}
}
