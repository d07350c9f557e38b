// Package nofollow is the redirect rule of every HTTP client soakd points
// at a target: follow none. A target's metrics endpoint, pprof URL,
// readiness URL or websocket that answers 3xx could send soakd to another
// host than the one the configuration was checked for (loopback unless
// target.allow_non_loopback), and Go's client drops Authorization on a
// redirect to another host but keeps custom headers (an X-Api-Key from
// headers_env arrived at the redirect's host). The load driver refuses
// redirects the same way.
package nofollow

import (
	"fmt"
	"net/http"
	"time"
)

// CheckRedirect refuses every redirect, naming where it pointed; use it as
// http.Client.CheckRedirect.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	from := "?"
	if len(via) > 0 {
		from = via[len(via)-1].URL.Redacted()
	}
	return fmt.Errorf("%s redirected to %s: soakd follows no redirect (it could lead off the hosts the configuration allows); point the URL at where it redirects", from, req.URL.Redacted())
}

// Client is an HTTP client that follows no redirect, with timeout (0: none).
func Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: CheckRedirect}
}
