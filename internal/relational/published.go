package relational

// Published is one of seed 000's own results, as the seed prints them:
// graphql-sequelize on Node.js with Sequelize (pool max 25), driven by
// Apache Bench with n = 500 requests at c = 20, on the seed author's
// machine and database. They are theirs, for reference only: another
// stack, machine and database than any soakd run.
type Published struct {
	// Operation is the query shape at its size, as Operations names it.
	Operation string `json:"operation"`
	// Strategy is the seed's: "includes" (Sequelize joins, what soakd's
	// joined strategy does) or "batching" (a dataloader, soakd's batched).
	Strategy string `json:"strategy"`
	// RPS is ab's "Requests per second" (n ÷ the whole test's time).
	RPS float64 `json:"rps"`
	// MeanMs is ab's mean total connection time; P50Ms … MaxMs its
	// "percentage of the requests served within a certain time" (50 %,
	// 90 %, 99 %, 100 %), in milliseconds.
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// The seed's names of its two strategies.
const (
	PublishedIncludes = "includes"
	PublishedBatching = "batching"
)

// PublishedResults returns seed 000's table: fourteen operations, each
// with includes and batching. The seed prints no figures for
// tasks-user-25.
func PublishedResults() []Published {
	type pair struct {
		op   string
		i, b [6]float64 // rps, mean, p50, p90, p99, max
	}
	rows := []pair{
		{"tasks-user-250", [6]float64{48.99, 403, 388, 454, 602, 602}, [6]float64{27.09, 734, 711, 878, 960, 961}},
		{"users-tasks-250", [6]float64{8.02, 2458, 2429, 2685, 2757, 2933}, [6]float64{10.09, 1966, 1948, 2234, 2578, 2578}},
		{"users-tasks-25", [6]float64{51.22, 386, 369, 479, 588, 589}, [6]float64{77.62, 255, 248, 294, 438, 438}},
		{"users-completed-tasks-250", [6]float64{10.55, 1869, 1875, 2145, 2358, 2495}, [6]float64{14.85, 1332, 1319, 1577, 1809, 1809}},
		{"users-completed-tasks-25", [6]float64{69.09, 286, 274, 343, 540, 622}, [6]float64{116.00, 171, 161, 207, 313, 313}},
		{"users-completed-tasks-subtasks-250", [6]float64{1.25, 15811, 16096, 17125, 18039, 18039}, [6]float64{1.27, 15607, 17270, 21044, 23422, 23807}},
		{"users-completed-tasks-subtasks-25", [6]float64{12.03, 1638, 1628, 1758, 1829, 2242}, [6]float64{13.68, 1452, 1489, 2066, 2638, 2638}},
		{"users-tasks-subordinates-250", [6]float64{6.41, 3072, 3059, 3368, 3426, 3755}, [6]float64{7.09, 2797, 2815, 3144, 3778, 3986}},
		{"users-tasks-subordinates-25", [6]float64{46.47, 425, 412, 507, 566, 682}, [6]float64{74.11, 268, 259, 305, 528, 528}},
		{"projects-users", [6]float64{48.11, 410, 395, 469, 640, 753}, [6]float64{129.21, 154, 139, 207, 306, 306}},
		{"projects-users-first15", [6]float64{52.81, 374, 364, 427, 530, 530}, [6]float64{166.33, 120, 108, 135, 345, 346}},
		{"projects-users-tasks", [6]float64{5.99, 3289, 3343, 3488, 3614, 3828}, [6]float64{11.22, 1777, 1722, 2175, 2613, 2613}},
		{"projects-users-first15-tasks", [6]float64{6.51, 3026, 2988, 3486, 3835, 3835}, [6]float64{19.29, 1029, 954, 1213, 1815, 1815}},
		{"projects-users-completed-tasks", [6]float64{4.84, 4081, 4067, 4716, 5625, 5626}, [6]float64{11.84, 1681, 1588, 2080, 2127, 2151}},
	}
	out := make([]Published, 0, 2*len(rows))
	for _, r := range rows {
		for _, s := range []struct {
			name string
			v    [6]float64
		}{{PublishedIncludes, r.i}, {PublishedBatching, r.b}} {
			out = append(out, Published{Operation: r.op, Strategy: s.name, RPS: s.v[0], MeanMs: s.v[1], P50Ms: s.v[2], P90Ms: s.v[3], P99Ms: s.v[4], MaxMs: s.v[5]})
		}
	}
	return out
}
