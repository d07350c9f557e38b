package workloads

import (
	"strconv"

	"github.com/soakd/soakd/donut"
)

// flavorByIndex maps n%3 to the flavour writers send on their n-th
// iteration, cycling through the same three the store seeds with.
func flavorByIndex(n int) string { return string(donut.SeedDonut(n%3 + 3).Flavor) }

// seedID returns the id of the i-th seeded donut (i in 1..n).
func seedID(i int) string { return donut.SeedID(i) }

// seedFlavor returns the flavor of the i-th seeded donut, which readers assert.
func seedFlavor(i int) string { return string(donut.SeedDonut(i).Flavor) }

// writerID returns the id written by the writer whose global user index in the
// phase is k. Writers use ids outside the seeded range so that readers never
// observe writes and their flavor assertion stays deterministic.
func writerID(k int) string { return "w" + strconv.Itoa(k) }
