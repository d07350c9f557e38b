package kpi

// GoroutineSlack is how many goroutines above the pre-phase baseline still
// count as "returned": the runtime and net/http may keep one or two (a timer,
// an idle-connection reaper) that are not the phase's.
const GoroutineSlack = 2

// Returned reports whether the target is back at its pre-phase state: no
// subscription left open and no more goroutines than before, give or take
// GoroutineSlack.
func Returned(baseGoroutines, goroutines uint64, subscribers int) bool {
	return subscribers == 0 && goroutines <= baseGoroutines+GoroutineSlack
}
