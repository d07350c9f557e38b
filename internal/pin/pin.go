// Package pin pins a process to a set of CPUs (sched_setaffinity), so that the soak target and its load
// driver run on disjoint cores and neither steals the other's CPU time on a small machine. It also parses
// and formats CPU lists in the kernel's notation ("0-3,5").
package pin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU is the largest CPU number this package handles: golang.org/x/sys/unix.CPUSet holds CPUs 0..1023.
const MaxCPU = 1023

// Parse reads a CPU list such as "0", "0,1", "0-3" or "0-1,4" (the notation of taskset -c and of
// /sys/devices/system/cpu/online; spaces around items are ignored) and returns its CPUs sorted and without
// duplicates. Errors name the bad item: an empty list or item, anything but decimal CPU numbers and
// ranges lo-hi with lo <= hi, or a CPU above MaxCPU.
func Parse(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("invalid cpu list %q: it is empty; want e.g. \"0\", \"0,1\" or \"0-3\"", s)
	}
	var set [MaxCPU + 1]bool
	for tok := range strings.SplitSeq(s, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			return nil, fmt.Errorf("invalid cpu list %q: an item is empty", s)
		}
		loText, hiText, isRange := strings.Cut(tok, "-")
		lo, err := parseCPU(loText)
		if err != nil {
			return nil, fmt.Errorf("invalid cpu %q in %q: %w", tok, s, err)
		}
		hi := lo
		if isRange {
			if hi, err = parseCPU(hiText); err != nil {
				return nil, fmt.Errorf("invalid cpu range %q in %q: %w", tok, s, err)
			}
			if hi < lo {
				return nil, fmt.Errorf("invalid cpu range %q in %q: %d is above %d", tok, s, lo, hi)
			}
		}
		for c := lo; c <= hi; c++ {
			set[c] = true
		}
	}
	var cpus []int
	for c, ok := range set {
		if ok {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// parseCPU reads one CPU number: decimal digits only (no sign), at most MaxCPU.
func parseCPU(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("want a cpu number or a range like 0-3")
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("want a cpu number or a range like 0-3")
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > MaxCPU {
		return 0, fmt.Errorf("cpu numbers go up to %d", MaxCPU)
	}
	return n, nil
}

// Format writes cpus in the notation Parse reads, sorted and with runs as ranges: [0 1 2 3 5] gives
// "0-3,5". Duplicates are dropped and an empty list gives "". It is how the report names the cores the
// target and the driver had.
func Format(cpus []int) string {
	cs := slices.Clone(cpus)
	slices.Sort(cs)
	cs = slices.Compact(cs)
	var b strings.Builder
	for i := 0; i < len(cs); {
		j := i
		for j+1 < len(cs) && cs[j+1] == cs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cs[j]))
		}
		i = j + 1
	}
	return b.String()
}

// validate checks that cpus is a non-empty list of CPU numbers in [0, MaxCPU] and returns it sorted and
// without duplicates.
func validate(cpus []int) ([]int, error) {
	if len(cpus) == 0 {
		return nil, fmt.Errorf("no cpus given")
	}
	for _, c := range cpus {
		if c < 0 || c > MaxCPU {
			return nil, fmt.Errorf("cpu %d out of range [0, %d]", c, MaxCPU)
		}
	}
	cs := slices.Clone(cpus)
	slices.Sort(cs)
	return slices.Compact(cs), nil
}
