package relational

import (
	"context"
	"net/http"
	"time"
)

// Instrument wraps next, one endpoint of the scenario, so that each
// request carries a fresh Tally (WithTally) and a deadline of timeout for
// its database work (none when timeout ≤ 0), and its tally is added to m
// under endpoint when next returns (m may be nil). An exhausted pool or a
// stalled database then fails the request with a DBError of cause
// CauseTimeout instead of holding it forever.
func Instrument(endpoint string, m *Metrics, timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := &Tally{}
		ctx := WithTally(r.Context(), t)
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		next.ServeHTTP(w, r.WithContext(ctx))
		m.Observe(endpoint, t)
	})
}
