package kpi

import "fmt"

// MinCPUPerRequest is the least CPU time, in seconds, that serving one
// HTTP request costs any server: parsing it, running a handler and writing
// the answer take well over a microsecond on any machine soakd runs on
// (the built-in target spends about 100 µs). A sampled process that spent
// less served nothing of the load.
const MinCPUPerRequest = 1e-6

// MinRequestsForCPUCheck is how many requests a window must have served for
// ImplausibleCPU to judge it: fewer could honestly round to no CPU tick
// (the OS counts CPU time in 10 ms ticks).
const MinRequestsForCPUCheck = 1000

// ImplausibleCPU says why a window's CPU figure cannot be the server's:
// the target served requests requests while the sampled process used
// cpuSeconds of CPU time, less than MinCPUPerRequest each. It returns ""
// when the figure is plausible or the window served too few requests to
// tell. A wrong target.pid (a process beside the server) or a command whose
// server runs elsewhere read 0.00 % vs 0.00 %, a pass, before this check.
func ImplausibleCPU(requests, cpuSeconds float64) string {
	if requests < MinRequestsForCPUCheck || cpuSeconds >= requests*MinCPUPerRequest {
		return ""
	}
	return fmt.Sprintf("the sampled process used %.3f s of CPU while the target served %.0f requests (%.2f µs each, under the %.0f µs any HTTP server spends): "+
		"it is not the process that answered them; check target.pid or target.argv against the server behind target.graphql_url",
		cpuSeconds, requests, cpuSeconds/requests*1e6, MinCPUPerRequest*1e6)
}
