//go:build race

package relational

// raceEnabled: the race detector slows SQLite (transpiled C, all
// instrumented) about twentyfold, so loads are sized down under it.
const raceEnabled = true
