package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/echo"
)

// DefaultMaxBodyBytes is the request body limit, in bytes, used when
// Options.MaxBodyBytes is not positive; it matches the GraphQL arm's default.
const DefaultMaxBodyBytes int64 = 1 << 20

// Prefix is the path prefix the handler serves; mount it there
// (mux.Handle(control.Prefix, h)). Donuts live at Prefix + "{id}".
const Prefix = "/api/donuts/"

// Options configures NewHandler. The zero value is usable.
type Options struct {
	// MaxBodyBytes is the largest accepted PUT body, in bytes; larger bodies
	// get HTTP 413. Zero or less means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger receives client errors at debug level. Nil means zap.NewNop().
	Logger *zap.Logger
}

// handler serves the REST routes.
type handler struct {
	svc     *donut.Service
	maxBody int64
	log     *zap.Logger
}

// NewHandler returns the REST control group's handler over svc, to be mounted
// at Prefix ("/api/donuts/"):
//
//	GET /api/donuts/{id}  200 {"data":{"donut":{...}}}, 404 if unknown
//	PUT /api/donuts/{id}  body {"name":..,"flavor":..}, 200 {"data":{"addOrUpdateDonut":{...}}}
//
// Errors are {"errors":[{"message":...}]} with status 400 (malformed body or
// invalid field), 404 (unknown donut or path), 405 (other methods, with an
// Allow header), 413 (body over the limit) or 415 (a Content-Type that is not
// JSON).
func NewHandler(svc *donut.Service, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	h := &handler{svc: svc, maxBody: opts.MaxBodyBytes, log: opts.Logger}
	mux := http.NewServeMux()
	// One method-less pattern, so that wrong methods get a JSON 405 rather
	// than ServeMux's plain-text one.
	mux.HandleFunc(Prefix+"{id}", h.donut)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, http.StatusNotFound, fmt.Sprintf("no route for %s", echo.Input(r.URL.Path)))
	})
	return mux
}

func (h *handler) donut(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.get(w, r)
	case http.MethodPut:
		h.put(w, r)
	default:
		w.Header().Set("Allow", "GET, PUT")
		h.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use GET or PUT", echo.Input(r.Method)))
	}
}

// getResponse mirrors the GraphQL response to { donut(id:$id){ id name flavor } }.
type getResponse struct {
	Data struct {
		Donut donut.Donut `json:"donut"`
	} `json:"data"`
}

// putResponse mirrors the GraphQL response to addOrUpdateDonut.
type putResponse struct {
	Data struct {
		AddOrUpdateDonut donut.Donut `json:"addOrUpdateDonut"`
	} `json:"data"`
}

type errorResponse struct {
	Errors []errorMessage `json:"errors"`
}

type errorMessage struct {
	Message string `json:"message"`
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, ok := h.svc.Store.Get(id)
	if !ok {
		h.fail(w, http.StatusNotFound, fmt.Sprintf("donut %q not found", echo.Input(id)))
		return
	}
	var resp getResponse
	resp.Data.Donut = d
	h.write(w, http.StatusOK, resp)
}

func (h *handler) put(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		h.fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q is not JSON; send application/json", ct))
		return
	}
	if r.ContentLength > h.maxBody {
		h.tooLarge(w)
		return
	}
	body, err := decodeDonutBody(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			h.tooLarge(w)
			return
		}
		h.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var resp putResponse
	resp.Data.AddOrUpdateDonut = h.svc.Update(donut.Donut{ID: r.PathValue("id"), Name: body.Name, Flavor: body.Flavor})
	h.write(w, http.StatusOK, resp)
}

// isJSON reports whether a Content-Type header names JSON (application/json
// or any application/*+json), parameters such as charset aside.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func (h *handler) tooLarge(w http.ResponseWriter) {
	h.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: the limit is %d bytes", h.maxBody))
}

// maxMessageBytes caps an error message, which may quote client input (a
// flavour, a field name) of any length up to the body limit.
const maxMessageBytes = 512

// fail writes the single JSON error shape every error response uses, its
// message cut to maxMessageBytes (fewer, to end on a whole UTF-8 character)
// and followed by "… (N bytes)" when longer.
func (h *handler) fail(w http.ResponseWriter, status int, msg string) {
	if len(msg) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = fmt.Sprintf("%s… (%d bytes)", msg[:cut], len(msg))
	}
	h.log.Debug("request failed", zap.Int("status", status), zap.String("message", msg))
	h.write(w, status, errorResponse{Errors: []errorMessage{{Message: msg}}})
}

// write encodes v in one buffer, so the response gets a Content-Length and
// leaves in one write, as gqlgen's responses do.
func (h *handler) write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for the fixed response types above
		h.log.Error("cannot encode response", zap.Error(err))
		status = http.StatusInternalServerError
		b = []byte(`{"errors":[{"message":"internal server error"}]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		h.log.Debug("cannot write response", zap.Error(err))
	}
}
