package workloads

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Endpoints are the URLs a phase is driven at. The built-in target serves
// all of them under one base URL (BaseEndpoints); a server soakd does not
// host may serve GraphQL and its REST twin apart.
type Endpoints struct {
	// GraphQL is the GraphQL endpoint itself, e.g. http://127.0.0.1:8080/graphql:
	// queries and mutations are POSTed to it.
	GraphQL string `json:"graphql"`
	// GraphQLWS is the GraphQL websocket URL subscriptions dial, e.g.
	// ws://127.0.0.1:8080/graphql; "" means GraphQL with a ws(s) scheme.
	GraphQLWS string `json:"graphql_ws,omitempty"`
	// REST is the base URL of the REST twin: its requests go to
	// REST + "/api/donuts/{id}". "" for a target without one: a phase
	// with REST operations is then refused.
	REST string `json:"rest"`
}

// BaseEndpoints returns the endpoints of a server that serves everything
// under base, as soakd's built-in target does: base/graphql (and its
// websocket) and base/api/donuts/{id}.
func BaseEndpoints(base string) (Endpoints, error) {
	u, err := parseTarget(base)
	if err != nil {
		return Endpoints{}, err
	}
	return Endpoints{GraphQL: u.String() + "/graphql", REST: u.String()}, nil
}

// endpoints are parsed Endpoints, ready to build requests from.
type endpoints struct {
	graphql string // the GraphQL endpoint, no trailing slash
	ws      string // the GraphQL websocket URL
	rest    string // the REST base, no trailing slash
}

// endpointsOf returns the endpoints of a server serving everything under base.
func endpointsOf(base *url.URL) endpoints {
	ep, _ := Endpoints{GraphQL: base.String() + "/graphql", REST: base.String()}.parse()
	return ep
}

// Validate checks that every URL is absolute, of the right scheme and
// without query or fragment.
func (e Endpoints) Validate() error {
	_, err := e.parse()
	return err
}

// WebsocketURL returns GraphQLWS, or when it is empty, GraphQL with its
// scheme turned to ws (wss for https).
func (e Endpoints) WebsocketURL() (string, error) {
	ep, err := e.parse()
	if err != nil {
		return "", err
	}
	return ep.ws, nil
}

func (e Endpoints) parse() (endpoints, error) {
	var errs []error
	check := func(name, raw string, schemes ...string) string {
		u, err := url.Parse(strings.TrimRight(raw, "/"))
		switch {
		case raw == "":
			errs = append(errs, fmt.Errorf("%s URL is missing", name))
		case err != nil:
			errs = append(errs, fmt.Errorf("invalid %s URL: %w", name, err))
		case u.Host == "" || !strings.Contains(" "+strings.Join(schemes, " ")+" ", " "+u.Scheme+" "):
			errs = append(errs, fmt.Errorf("invalid %s URL %q: want an absolute %s URL", name, raw, strings.Join(schemes, " or ")))
		case u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, fmt.Errorf("invalid %s URL %q: must not have a query or fragment", name, raw))
		default:
			return u.String()
		}
		return ""
	}
	ep := endpoints{graphql: check("GraphQL", e.GraphQL, "http", "https")}
	if e.REST != "" { // a target without a REST twin runs GraphQL phases only (RunAt)
		ep.rest = check("REST", e.REST, "http", "https")
	}
	if e.GraphQLWS != "" {
		ep.ws = check("GraphQL websocket", e.GraphQLWS, "ws", "wss")
	} else if ep.graphql != "" {
		u, _ := url.Parse(ep.graphql)
		if u.Scheme == "https" {
			u.Scheme = "wss"
		} else {
			u.Scheme = "ws"
		}
		ep.ws = u.String()
	}
	if err := errors.Join(errs...); err != nil {
		return endpoints{}, err
	}
	return ep, nil
}
