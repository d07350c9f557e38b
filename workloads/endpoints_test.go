package workloads

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestEndpoints(t *testing.T) {
	ep, err := BaseEndpoints("http://127.0.0.1:8080/")
	if err != nil || ep.GraphQL != "http://127.0.0.1:8080/graphql" || ep.REST != "http://127.0.0.1:8080" {
		t.Errorf("BaseEndpoints: %+v, %v", ep, err)
	}
	if ws, err := ep.WebsocketURL(); err != nil || ws != "ws://127.0.0.1:8080/graphql" {
		t.Errorf("websocket URL %q, %v", ws, err)
	}
	if ws, _ := (Endpoints{GraphQL: "https://h/gql", REST: "https://h"}).WebsocketURL(); ws != "wss://h/gql" {
		t.Errorf("https websocket URL %q", ws)
	}
	if ws, _ := (Endpoints{GraphQL: "http://h/gql", GraphQLWS: "ws://h/subs", REST: "http://h"}).WebsocketURL(); ws != "ws://h/subs" {
		t.Errorf("explicit websocket URL %q", ws)
	}
	err = Endpoints{GraphQL: "127.0.0.1:1/graphql", GraphQLWS: "http://h/ws", REST: "http://h/?x=1"}.Validate()
	for _, want := range []string{"invalid GraphQL URL", "invalid GraphQL websocket URL", "REST URL \"http://h/?x=1\": must not have a query"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
	if err := (Endpoints{}).Validate(); err == nil || !strings.Contains(err.Error(), "GraphQL URL is missing") {
		t.Errorf("empty endpoints: %v", err)
	}
}

// TestRunAtSeparateServers drives a GraphQL server and its REST twin that
// live apart, each under a path prefix: every request reaches its own.
func TestRunAtSeparateServers(t *testing.T) {
	fake := newFakeTarget(50)
	var gqlHits, restHits atomic.Int64
	gql := httptest.NewServer(http.StripPrefix("/api/v2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/graphql" {
			http.NotFound(w, r)
			return
		}
		gqlHits.Add(1)
		fake.handler().ServeHTTP(w, r)
	})))
	defer gql.Close()
	rest := httptest.NewServer(http.StripPrefix("/twin", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/donuts/") {
			http.NotFound(w, r)
			return
		}
		restHits.Add(1)
		fake.handler().ServeHTTP(w, r)
	})))
	defer rest.Close()
	p := testPhase(
		UserGroup{Operation: RESTGet, Users: 1, Iterations: 5},
		UserGroup{Operation: RESTPut, Users: 1, Iterations: 5},
		UserGroup{Operation: GraphQLQuery, Users: 1, Iterations: 5},
		UserGroup{Operation: GraphQLMutation, Users: 1, Iterations: 5},
	)
	r, err := RunAt(context.Background(), Endpoints{GraphQL: gql.URL + "/api/v2/graphql", REST: rest.URL + "/twin/"}, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 20 || r.Errors != 0 || gqlHits.Load() != 10 || restHits.Load() != 10 {
		t.Errorf("requests %d, errors %d %v, GraphQL hits %d, REST hits %d; want 20, 0, 10, 10", r.Requests, r.Errors, r.ErrorExamples, gqlHits.Load(), restHits.Load())
	}
}
