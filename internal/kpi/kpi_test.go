package kpi

import (
	"encoding/json"
	"testing"
)

func find(t *testing.T, rs []Result, name string) Result {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return Result{}
}

func TestEvaluateSeedTable(t *testing.T) {
	// Seed 002's published v0.13.1 (fail) and v0.14.0 (pass) figures.
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	f := func(rest, gql Figures, wantVerdict Outcome, wantPass map[string]bool) {
		t.Helper()
		rs := Evaluate(rest, gql, l)
		if got := Verdict(rs); got != wantVerdict {
			t.Errorf("verdict: got %s, want %s", got, wantVerdict)
		}
		for name, want := range wantPass {
			if got := find(t, rs, name).Pass; got != want {
				t.Errorf("%s pass: got %v, want %v", name, got, want)
			}
		}
	}
	f(Figures{CPUMachinePercent: 2, GCPercent: 1, ThroughputRPS: 37490},
		Figures{CPUMachinePercent: 9, GCPercent: 4, ThroughputRPS: 29830},
		OutcomeFail, map[string]bool{"cpu_machine_percent": false, "gc_percent": false, "throughput_rps": false})
	f(Figures{CPUMachinePercent: 2, GCPercent: 1, ThroughputRPS: 37360},
		Figures{CPUMachinePercent: 3, GCPercent: 1, ThroughputRPS: 36509},
		OutcomePass, map[string]bool{"cpu_machine_percent": true, "gc_percent": true, "throughput_rps": true})
}

func TestEvaluateBoundaries(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	rs := Evaluate(Figures{CPUMachinePercent: 10, GCPercent: 2, ThroughputRPS: 1000},
		Figures{CPUMachinePercent: 15, GCPercent: 3, ThroughputRPS: 900}, l)
	for _, name := range []string{"cpu_machine_percent", "gc_percent", "throughput_rps"} {
		if r := find(t, rs, name); !r.Pass {
			t.Errorf("%s exactly at the limit must pass: delta %v threshold %v", name, *r.Delta, *r.Threshold)
		}
	}
	tp := find(t, rs, "throughput_rps")
	if *tp.Delta != -10 || *tp.Threshold != -10 {
		t.Errorf("throughput delta/threshold: got %v/%v, want -10/-10", *tp.Delta, *tp.Threshold)
	}
	rs = Evaluate(Figures{CPUMachinePercent: 10, GCPercent: 2, ThroughputRPS: 1000},
		Figures{CPUMachinePercent: 15.01, GCPercent: 3.01, ThroughputRPS: 899}, l)
	if Verdict(rs) != OutcomeFail {
		t.Errorf("just past every limit must fail")
	}
	// GraphQL cheaper than REST always passes.
	rs = Evaluate(Figures{CPUMachinePercent: 10, GCPercent: 2, ThroughputRPS: 1000},
		Figures{CPUMachinePercent: 1, GCPercent: 0, ThroughputRPS: 5000}, l)
	if Verdict(rs) != OutcomePass {
		t.Errorf("a cheaper, faster GraphQL must pass")
	}
}

func TestOptionalGatesAndZeroBase(t *testing.T) {
	fifty := 50.0
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10, CPUPerRequestIncreasePercent: &fifty, GCPauseP99IncreasePercent: &fifty}
	rest := Figures{ThroughputRPS: 100, CPUMicrosPerRequest: 20, GCPauseP99Ms: 0}
	gql := Figures{ThroughputRPS: 100, CPUMicrosPerRequest: 32, GCPauseP99Ms: 0.1}
	rs := Evaluate(rest, gql, l)
	cpu := find(t, rs, "cpu_us_per_request")
	if !cpu.Gated || cpu.Pass || *cpu.Delta != 60 {
		t.Errorf("cpu per request: got gated=%v pass=%v delta=%v, want gated, failing, 60", cpu.Gated, cpu.Pass, *cpu.Delta)
	}
	p99 := find(t, rs, "gc_pause_p99_ms")
	if p99.Delta != nil || p99.Pass {
		t.Errorf("pause from a zero base: got delta %v pass %v, want nil and failing", p99.Delta, p99.Pass)
	}
	alloc := find(t, rs, "alloc_bytes_per_request")
	if alloc.Gated || !alloc.Pass || alloc.Rule != "informational" {
		t.Errorf("unset limit must be informational: %+v", alloc)
	}
	if Verdict(rs) != OutcomeFail {
		t.Errorf("a failing optional gate must fail the verdict")
	}
	if _, err := json.Marshal(rs); err != nil {
		t.Errorf("results must encode as JSON: %v", err)
	}
	// Throughput from zero REST cannot pass.
	if r := find(t, Evaluate(Figures{}, Figures{ThroughputRPS: 5}, l), "throughput_rps"); r.Pass {
		t.Errorf("throughput against a zero REST baseline must not pass")
	}
}
