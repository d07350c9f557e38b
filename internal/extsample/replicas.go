package extsample

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Replica is one replica of a service and its sample, taken in the same
// round of scrapes as the other replicas'.
type Replica struct {
	// Name identifies the replica in sources and reasons: a pod's
	// namespace/name, with its restart count when it restarted ("shop/gql-0
	// (restart 1)"), so that a window spanning a restart reads two sources.
	Name   string
	Sample Sample
}

// SumReplicas is the sample of a service served by the replicas rs, each
// sampled at about the instant at: every cumulative counter and every
// gauge is the sum over the replicas (the service's CPU, allocation, GC
// cycles, live heap, goroutines), the pause histograms' buckets add. A
// figure is measured only when every replica measured it: otherwise it is
// not measured with the first replica's reason, named. Each figure's source
// names the replicas it sums, so that Between refuses a window whose two
// ends sum different replicas (one joined, left or restarted between them):
// its counters would jump by a process's whole history.
//
// The OS figures are not read: the replicas are processes on other
// machines, with no PID here. Their CPU is their own
// process_cpu_seconds_total (the Extra figure Between reads when a sample
// is a sum of replicas).
func SumReplicas(at time.Time, rs []Replica) Sample {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	over := fmt.Sprintf(", summed over %d replicas (%s)", len(rs), strings.Join(names, ", "))
	out := Sample{Time: at, Endpoint: fmt.Sprintf("%d replicas", len(rs)), Replicas: len(rs)}
	out.OS = osNotMeasured(0, "the replicas run in pods, on machines soakd reads no process of: their OS figures (RSS, threads, file descriptors) are not measured; CPU is each replica's own process_cpu_seconds_total")
	if len(rs) == 0 {
		out.Runtime = runtimeNotMeasured(RuntimeUnknown, "", "no replica was sampled")
		out.Error = "no replica was sampled"
		return out
	}
	var errs []string
	var cost, scrape, bytes int64
	for _, r := range rs {
		if r.Sample.Error != "" {
			errs = append(errs, r.Name+": "+r.Sample.Error)
		}
		cost = max(cost, r.Sample.CostNanoseconds)
		scrape += r.Sample.ScrapeNanoseconds
		bytes += r.Sample.ScrapeBytes
	}
	out.Error = strings.Join(errs, "; ")
	// A round's scrapes run in parallel: its cost is the slowest reading;
	// each replica renders one scrape, so the scrape's share of a
	// replica's time is the mean scrape.
	out.CostNanoseconds = cost
	out.ScrapeNanoseconds, out.ScrapeBytes = scrape/int64(len(rs)), bytes/int64(len(rs))

	first := rs[0].Sample.Runtime
	rt := RuntimeFigures{Runtime: first.Runtime, RuntimeBasis: first.RuntimeBasis}
	for _, r := range rs[1:] {
		if r.Sample.Runtime.Runtime != first.Runtime {
			return withRuntimeMismatch(out, rs)
		}
	}
	sum := func(get func(RuntimeFigures) Figure) Figure {
		f := get(first)
		for _, r := range rs {
			g := get(r.Sample.Runtime)
			if !g.Measured {
				return f.withReason(r.Name + ": " + cmp.Or(g.Reason, "not given"))
			}
		}
		f.Value = 0
		for _, r := range rs {
			f.Value += get(r.Sample.Runtime).Value
		}
		f.Source += over
		return f
	}
	rt.GCCycles = sum(func(r RuntimeFigures) Figure { return r.GCCycles })
	rt.GCSeconds = sum(func(r RuntimeFigures) Figure { return r.GCSeconds })
	rt.RuntimeCPUSeconds = sum(func(r RuntimeFigures) Figure { return r.RuntimeCPUSeconds })
	rt.AllocBytes = sum(func(r RuntimeFigures) Figure { return r.AllocBytes })
	if first.AllocObjects.Measured || first.AllocObjects.Reason != "" {
		rt.AllocObjects = sum(func(r RuntimeFigures) Figure { return r.AllocObjects })
	}
	rt.HeapLiveBytes = sum(func(r RuntimeFigures) Figure { return r.HeapLiveBytes })
	rt.HeapUsedBytes = sum(func(r RuntimeFigures) Figure { return r.HeapUsedBytes })
	rt.GCPauses = sumPauses(rs)
	if rt.GCPauses != nil {
		rt.GCPauses.Series += over
	}
	for _, k := range first.GCKinds {
		find := func(r RuntimeFigures) (KindFigures, bool) {
			i := slices.IndexFunc(r.GCKinds, func(x KindFigures) bool { return x.Kind == k.Kind })
			if i < 0 {
				return KindFigures{}, false
			}
			return r.GCKinds[i], true
		}
		rt.GCKinds = append(rt.GCKinds, KindFigures{Kind: k.Kind,
			Cycles: sum(func(r RuntimeFigures) Figure {
				if x, ok := find(r); ok {
					return x.Cycles
				}
				return k.Cycles.withReason("no " + k.Kind + " collections exposed")
			}),
			Seconds: sum(func(r RuntimeFigures) Figure {
				if x, ok := find(r); ok {
					return x.Seconds
				}
				return k.Seconds.withReason("no " + k.Kind + " collections exposed")
			}),
		})
	}
	for _, x := range first.Extra {
		rt.Extra = append(rt.Extra, sum(func(r RuntimeFigures) Figure {
			for _, y := range r.Extra {
				if y.Name == x.Name {
					return y
				}
			}
			return x.withReason("does not expose " + x.Name)
		}))
	}
	out.Runtime = rt
	return out
}

// withRuntimeMismatch is the sample of replicas read as different runtimes:
// no figure of theirs adds up.
func withRuntimeMismatch(out Sample, rs []Replica) Sample {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s is %s", r.Name, cmp.Or(string(r.Sample.Runtime.Runtime), "unknown")))
	}
	why := "the replicas run different runtimes (" + strings.Join(parts, ", ") + "): their figures do not add up"
	out.Runtime = runtimeNotMeasured(RuntimeUnknown, "", why)
	out.Error = cmp.Or(out.Error, why)
	return out
}

// sumPauses adds the replicas' pause histograms bucket by bucket; nil when
// any replica has none or their buckets differ.
func sumPauses(rs []Replica) *PauseHistogram {
	h0 := rs[0].Sample.Runtime.GCPauses
	if h0 == nil {
		return nil
	}
	out := &PauseHistogram{Series: h0.Series, UpperBounds: slices.Clone(h0.UpperBounds), Cumulative: make([]uint64, len(h0.Cumulative))}
	for _, r := range rs {
		h := r.Sample.Runtime.GCPauses
		if h == nil || !slices.Equal(h.UpperBounds, h0.UpperBounds) || len(h.Cumulative) != len(out.Cumulative) {
			return nil
		}
		for i, c := range h.Cumulative {
			out.Cumulative[i] += c
		}
		out.Count += h.Count
	}
	return out
}
