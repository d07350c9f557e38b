package workloads

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// fakeTarget is an in-memory stand-in for the soakd target's four endpoints,
// written independently of the engine's request builder so that the two check
// each other. It records what it saw for the tests to assert.
type fakeTarget struct {
	donuts int
	// fault, when set, may answer a request itself (returning true) to inject an error.
	fault func(w http.ResponseWriter, r *http.Request, op Operation) bool
	// seen, when set, is called after each request is recorded.
	seen func(op Operation)

	mu       sync.Mutex
	store    map[string]donutJSON
	counts   map[Operation]int
	baggage  map[string]int
	arrivals map[string][]time.Time // by writer id; nil records none (benchmarks)
}

func newFakeTarget(donuts int) *fakeTarget {
	return &fakeTarget{
		donuts:   donuts,
		store:    make(map[string]donutJSON),
		counts:   make(map[Operation]int),
		baggage:  make(map[string]int),
		arrivals: make(map[string][]time.Time),
	}
}

// handler returns the target's HTTP handler.
func (f *fakeTarget) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/donuts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if f.note(w, r, RESTGet, "") {
			return
		}
		d, ok := f.get(r.PathValue("id"))
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		reply(w, "donut", d)
	})
	mux.HandleFunc("PUT /api/donuts/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if f.note(w, r, RESTPut, id) {
			return
		}
		var in struct{ Name, Flavor string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d := donutJSON{ID: id, Name: in.Name, Flavor: in.Flavor}
		f.put(d)
		reply(w, "addOrUpdateDonut", d)
	})
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
			return
		}
		var in struct {
			Query         string `json:"query"`
			OperationName string `json:"operationName"`
			Variables     struct {
				ID    string    `json:"id"`
				Donut donutJSON `json:"donut"`
			} `json:"variables"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case in.OperationName == "Donut" && in.Query == queryDocument:
			r.SetPathValue("id", in.Variables.ID) // for fault hooks, as in REST
			if f.note(w, r, GraphQLQuery, "") {
				return
			}
			d, ok := f.get(in.Variables.ID)
			if !ok {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"data":{"donut":null}}`)
				return
			}
			reply(w, "donut", d)
		case in.OperationName == "UpdateDonut" && in.Query == mutationDocument:
			if f.note(w, r, GraphQLMutation, in.Variables.Donut.ID) {
				return
			}
			f.put(in.Variables.Donut)
			reply(w, "addOrUpdateDonut", in.Variables.Donut)
		default:
			http.Error(w, "unknown operation "+in.OperationName, http.StatusBadRequest)
		}
	})
	return mux
}

// note records a request and gives the fault hook its chance to answer it.
func (f *fakeTarget) note(w http.ResponseWriter, r *http.Request, op Operation, writer string) bool {
	now := time.Now()
	f.mu.Lock()
	f.counts[op]++
	f.baggage[r.Header.Get("Baggage")]++
	if writer != "" && f.arrivals != nil {
		f.arrivals[writer] = append(f.arrivals[writer], now)
	}
	f.mu.Unlock()
	if f.seen != nil {
		f.seen(op)
	}
	return f.fault != nil && f.fault(w, r, op)
}

func (f *fakeTarget) get(id string) (donutJSON, bool) {
	if i, err := strconv.Atoi(id); err == nil && i >= 1 && i <= f.donuts {
		return donutJSON{ID: id, Name: "donut-" + id, Flavor: []string{"VANILLA", "STRAWBERRY", "CHOCOLATE"}[i%3]}, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.store[id]
	return d, ok
}

func (f *fakeTarget) put(d donutJSON) {
	f.mu.Lock()
	f.store[d.ID] = d
	f.mu.Unlock()
}

// reply writes {"data":{key: d}}.
func reply(w http.ResponseWriter, key string, d donutJSON) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{key: d}})
}
