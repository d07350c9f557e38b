package extsample

import (
	"fmt"
	"slices"
	"time"

	"github.com/soakd/soakd/profiles"
)

// GoodEnds returns the first and last samples of ss that read without
// error, or ss's own ends when fewer than two did: a window's figures are
// then not measured with the failed reading's reason.
func GoodEnds(ss []Sample) (Sample, Sample) {
	first, last := -1, -1
	for i, s := range ss {
		if s.Error != "" {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || first == last {
		return ss[0], ss[len(ss)-1]
	}
	return ss[first], ss[last]
}

// Summarize reduces an external target's samples over a window
// (want long) to the summary the KPIs read, and returns the window's
// figures with their sources. A figure the target does not give is in
// Summary.NotMeasured with the reason, never a 0 taken for a value.
func Summarize(ss []Sample, want time.Duration, cores, minSamples int) (*profiles.Summary, *Window, error) {
	slices.SortFunc(ss, func(a, b Sample) int { return a.Time.Compare(b.Time) })
	if len(ss) < minSamples {
		return nil, nil, fmt.Errorf("only %d samples in the %.1fs steady window (at least %d needed): lower sampler.interval or lengthen the phase", len(ss), want.Seconds(), minSamples)
	}
	first, last := GoodEnds(ss)
	w, err := Between(first, last, cores)
	if err != nil {
		return nil, nil, err
	}
	sum := &profiles.Summary{WindowSeconds: w.Seconds, Samples: len(ss), Cores: cores, FDsMax: -1, ThreadsMax: -1, NotMeasured: map[string]string{}}
	miss := func(key, why string) {
		if why == "" {
			why = "not given by the target"
		}
		sum.NotMeasured[key] = why
		sum.Notes = append(sum.Notes, key+" not measured: "+why)
	}
	if f := w.CPUSeconds; f.Measured {
		sum.CPUKnown = true
		sum.CPUSeconds, sum.CPUMachinePercent, sum.CPUCorePercent = f.Value, w.CPUMachinePercent.Value, w.CPUCorePercent.Value
	} else {
		miss("cpu_seconds", f.Reason)
	}
	if f := w.GCPercent; f.Measured {
		sum.GCPercentKnown, sum.GCPercent = true, f.Value
	} else {
		miss("gc_percent", f.Reason)
	}
	if f := w.GCCycles; f.Measured {
		sum.GCCycles = uint64(f.Value)
		if sum.GCCycles > 0 {
			sum.GCIntervalMeanSeconds = w.Seconds / float64(sum.GCCycles)
		}
		gcIntervalMax(sum, ss)
	} else {
		miss("gc_cycles", f.Reason)
	}
	forced := "the target's runtime does not split forced collections from the others"
	for _, k := range w.GCKinds {
		if k.Kind == "forced" {
			if k.Cycles.Measured {
				forced = ""
				sum.GCForcedCycles = uint64(k.Cycles.Value)
				if sum.GCForcedCycles <= sum.GCCycles {
					sum.GCAutomaticCycles = sum.GCCycles - sum.GCForcedCycles
				}
			} else {
				forced = k.Cycles.Reason
			}
		}
	}
	if forced != "" {
		miss("gc_forced_cycles", forced)
	}
	summarizePauses(sum, first, last, miss)
	if f := w.AllocBytes; f.Measured {
		sum.AllocBytes = uint64(f.Value)
		sum.AllocBytesPerSecond = w.AllocBytesPerSecond.Value
	} else {
		miss("alloc_bytes", f.Reason)
	}
	if a, b := first.Runtime.AllocObjects, last.Runtime.AllocObjects; a.Measured && b.Measured && b.Value >= a.Value && w.Seconds > 0 {
		sum.AllocObjects = uint64(b.Value - a.Value)
		sum.AllocObjectsPerSecond = float64(sum.AllocObjects) / w.Seconds
	} else {
		miss("alloc_objects", allocObjectsMissing(last.Runtime))
	}
	if f := last.ExtraFigure("heap_objects"); f.Measured {
		sum.HeapObjectsLast = uint64(f.Value)
	} else {
		miss("heap_objects", f.Reason)
	}
	var heapWhy, goalWhy, goroutinesWhy, rssWhy string
	var heapSeen, goalSeen, goroutinesSeen, rssSeen bool
	var cost, scrapeCost, scrapeBytes float64
	var scrapes int
	for _, s := range ss {
		cost += float64(s.CostNanoseconds)
		if s.ScrapeNanoseconds > 0 {
			scrapes++
			scrapeCost += float64(s.ScrapeNanoseconds)
			scrapeBytes += float64(s.ScrapeBytes)
			sum.ScrapeCostMaxUs = max(sum.ScrapeCostMaxUs, float64(s.ScrapeNanoseconds)/1e3)
		}
		if f := s.Runtime.HeapLiveBytes; f.Measured {
			heapSeen = true
			sum.HeapLiveBytesMax = max(sum.HeapLiveBytesMax, uint64(f.Value))
		} else {
			heapWhy = f.Reason
		}
		if f := s.ExtraFigure("heap_goal_bytes"); f.Measured {
			goalSeen = true
			sum.HeapGoalBytesMax = max(sum.HeapGoalBytesMax, uint64(f.Value))
		} else {
			goalWhy = f.Reason
		}
		if f := s.ExtraFigure("goroutines"); f.Measured {
			goroutinesSeen = true
			sum.GoroutinesMax = max(sum.GoroutinesMax, uint64(f.Value))
		} else {
			goroutinesWhy = f.Reason
		}
		if f := s.OS.RSSBytes; f.Measured {
			rssSeen = true
			sum.RSSBytesMax = max(sum.RSSBytesMax, uint64(f.Value))
		} else {
			rssWhy = f.Reason
		}
		if f := s.OS.FDs; f.Measured {
			sum.FDsMax = max(sum.FDsMax, int32(f.Value))
		}
		if f := s.OS.Threads; f.Measured {
			sum.ThreadsMax = max(sum.ThreadsMax, int32(f.Value))
		}
	}
	if f := last.Runtime.HeapLiveBytes; f.Measured {
		sum.HeapLiveBytesLast = uint64(f.Value)
	}
	for _, m := range []struct {
		seen     bool
		key, why string
	}{{heapSeen, "heap_live_bytes", heapWhy}, {goalSeen, "heap_goal_bytes", goalWhy}, {goroutinesSeen, "goroutines", goroutinesWhy}, {rssSeen, "rss_bytes", rssWhy}} {
		if !m.seen {
			miss(m.key, m.why)
		}
	}
	if sum.FDsMax < 0 {
		miss("fds", last.OS.FDs.Reason)
	}
	if sum.ThreadsMax < 0 {
		miss("threads", last.OS.Threads.Reason)
	}
	meanCost := cost / float64(len(ss))
	sum.SamplerCostMeanUs = meanCost / 1e3
	spacing := ss[len(ss)-1].Time.Sub(ss[0].Time).Seconds() / float64(len(ss)-1)
	if spacing > 0 {
		sum.SamplerCorePercent = meanCost / 1e9 / spacing * 100
	}
	if scrapes > 0 {
		sum.ScrapeCostMeanUs = scrapeCost / float64(scrapes) / 1e3
		sum.ScrapeBytesMean = scrapeBytes / float64(scrapes)
		if spacing > 0 {
			sum.ScrapeCorePercent = sum.ScrapeCostMeanUs / 1e6 / spacing * 100
		}
		sum.ScrapeLimitPercent = DefaultMaxScrapeShare * 100
		if sum.ScrapeCorePercent > sum.ScrapeLimitPercent {
			sum.ScrapeOverLimit = true
			sum.Notes = append(sum.Notes, fmt.Sprintf("the metrics scrape took %.2f %% of wall time (mean %.0f µs, max %.0f µs a scrape), above the %.1f %% limit: "+
				"the window's CPU, throughput and latency figures include its cost", sum.ScrapeCorePercent, sum.ScrapeCostMeanUs, sum.ScrapeCostMaxUs, sum.ScrapeLimitPercent))
		}
	}
	return sum, &w, nil
}

// gcIntervalMax fills GCIntervalMaxSeconds from the samples at which
// the GC cycle count advanced, as the built-in summary does.
func gcIntervalMax(sum *profiles.Summary, ss []Sample) {
	var prev time.Time
	var prevCycles float64
	havePrev, seen := false, 0
	for _, s := range ss {
		f := s.Runtime.GCCycles
		if !f.Measured {
			continue
		}
		if havePrev && f.Value > prevCycles {
			if seen > 0 {
				sum.GCIntervalMaxSeconds = max(sum.GCIntervalMaxSeconds, s.Time.Sub(prev).Seconds())
			}
			prev = s.Time
			seen++
		}
		prevCycles, havePrev = f.Value, true
	}
	if seen < 2 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("gc_interval_max_seconds not measured: %d sample(s) in the window saw a gc cycle complete, need 2", seen))
	}
}

// ExtraFigure returns the runtime-specific figure name of s, or a figure
// not measured saying the runtime gives none.
func (s Sample) ExtraFigure(name string) Figure {
	for _, f := range s.Runtime.Extra {
		if f.Name == name {
			return f
		}
	}
	rt := string(s.Runtime.Runtime)
	if rt == "" {
		rt = "unknown"
	}
	reason := fmt.Sprintf("the target's runtime (%s) gives no %s figure", rt, name)
	if s.Endpoint == "" {
		reason = "no metrics endpoint (target.metrics_url) is set"
	} else if s.Runtime.GCCycles.Reason != "" && !s.Runtime.GCCycles.Measured && s.Runtime.Runtime == RuntimeUnknown {
		reason = s.Runtime.GCCycles.Reason
	}
	return Figure{Name: name, Source: "prometheus endpoint", Definition: extraDefinitions[name], Reason: reason}
}

// extraDefinitions define the runtime-specific figures soakd reads.
var extraDefinitions = map[string]string{
	"goroutines":      "live goroutines (a Go runtime's figure)",
	"heap_goal_bytes": "heap size at which the next GC cycle starts (a Go runtime's figure)",
	"heap_objects":    "objects in the heap, live and not yet swept (a Go runtime's figure)",
}

// allocObjectsMissing says why allocated objects are not measured: the
// series a Go target was looked for, or that the runtime gives none.
func allocObjectsMissing(r RuntimeFigures) string {
	if f := r.AllocObjects; f.Reason != "" {
		return f.Reason
	}
	if r.Runtime == RuntimeGo {
		return "the count of allocated objects went backwards or was missing at an end of the window"
	}
	return fmt.Sprintf("the %s runtime's standard Prometheus series give no count of allocated objects", r.Runtime)
}
