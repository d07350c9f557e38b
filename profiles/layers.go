package profiles

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The layers a CPU sample is attributed to (see Layers.Classify). Their order here is the order of
// the report's layer table; user layers come before them.
const (
	LayerTransport       = "transport"
	LayerParse           = "parse"
	LayerValidate        = "validate"
	LayerExecute         = "execute"
	LayerSerialise       = "serialise"
	LayerServer          = "server code"
	LayerGC              = "GC and allocation"
	LayerScheduling      = "scheduling and syscalls"
	LayerInstrumentation = "soakd instrumentation"
	// LayerOther holds every sample no rule claims; it is always listed, never hidden.
	LayerOther = "other"
)

// builtinLayerOrder is the display order of the built-in layers.
func builtinLayerOrder() []string {
	return []string{LayerTransport, LayerParse, LayerValidate, LayerExecute, LayerSerialise,
		LayerServer, LayerGC, LayerScheduling, LayerInstrumentation, LayerOther}
}

// LayerRule claims the functions matching any of its patterns for a layer. A pattern is a glob over
// the function's full name as the profile spells it ("github.com/acme/cache.(*Cache).Get"): '*'
// matches any run of characters (slashes and dots included), every other character matches itself,
// and the pattern must match the whole name, so "github.com/acme/cache.*" claims the package
// github.com/acme/cache and "github.com/acme/cache*" its subpackages too.
type LayerRule struct {
	Layer    string
	Patterns []string
}

// defaultLayerRules are the built-in rules, read from the libraries' package paths; within one
// frame the first matching rule wins, so the narrower rules of a layer come before a wider one.
func defaultLayerRules() []LayerRule {
	return []LayerRule{
		{LayerInstrumentation, []string{
			"github.com/soakd/soakd/internal/metrics.*", // the arms' metrics middleware
			"github.com/soakd/soakd/profiles.*",         // the endpoint-labelling middleware
			"github.com/prometheus/*",
			"runtime/pprof.*", // the CPU profiler's own writer
			"github.com/grafana/pyroscope-go*",
		}},
		{LayerParse, []string{
			"github.com/vektah/gqlparser/v2/parser.*", "github.com/vektah/gqlparser/v2/lexer.*",
			"github.com/graph-gophers/graphql-go/internal/query.*", "github.com/graph-gophers/graphql-go/internal/common.*",
			"github.com/graphql-go/graphql/language/parser.*", "github.com/graphql-go/graphql/language/lexer.*",
		}},
		{LayerValidate, []string{
			"github.com/vektah/gqlparser/v2/validator*",
			"github.com/99designs/gqlgen/complexity.*", "github.com/99designs/gqlgen/graphql/handler/extension.*",
			"github.com/graph-gophers/graphql-go/internal/validation.*",
			"github.com/graphql-go/graphql.ValidateDocument*", "github.com/graphql-go/graphql.*Rule*",
			"github.com/graphql-go/graphql/language/visitor.*",
		}},
		{LayerSerialise, []string{
			"encoding/json.*",
			"github.com/99designs/gqlgen/graphql.Marshal*", "github.com/99designs/gqlgen/graphql.Unmarshal*",
			"github.com/99designs/gqlgen/graphql.*MarshalGQL*", "github.com/99designs/gqlgen/graphql.*UnmarshalGQL*",
			"github.com/99designs/gqlgen/graphql.writeQuotedString*", "github.com/99designs/gqlgen/graphql.WriteQuotedString*",
			"github.com/goccy/go-json*", "github.com/json-iterator/go*", "github.com/bytedance/sonic*",
		}},
		{LayerExecute, []string{
			"github.com/99designs/gqlgen/graphql/executor*", "github.com/99designs/gqlgen/graphql.*",
			"github.com/soakd/soakd/internal/graph.*",               // gqlgen's generated code and the resolvers
			"github.com/soakd/soakd/internal/relational/relgraph.*", // the relational scenario's GraphQL arm
			"github.com/graph-gophers/graphql-go/internal/exec*", "github.com/graph-gophers/graphql-go.*",
			"github.com/graphql-go/graphql.*",
			"github.com/vikstrous/dataloadgen*", "github.com/graph-gophers/dataloader*",
		}},
		{LayerTransport, []string{
			"net/http.*", "net.*", "internal/poll.*", "crypto/tls.*", "golang.org/x/net/http*",
			"github.com/valyala/fasthttp*",
			"github.com/99designs/gqlgen/graphql/handler.*", "github.com/99designs/gqlgen/graphql/handler/transport.*",
			"github.com/coder/websocket*", "github.com/gorilla/websocket*",
			"github.com/soakd/soakd/control.*",                     // the built-in REST handler
			"github.com/soakd/soakd/internal/relational/relrest.*", // the relational scenario's REST arm
		}},
	}
}

// compiledRule is a LayerRule with its globs compiled into one anchored regexp.
type compiledRule struct {
	layer string
	re    *regexp.Regexp
}

// Layers attributes CPU samples to layers: the user's rules first, then the built-in ones, then the
// server's own code (see ownCode), then the runtime's fallbacks. Build it with NewLayers.
type Layers struct {
	rules []compiledRule
	order []string
}

// NewLayers compiles the user's rules (checked before the built-in ones) into a Layers. A rule needs
// a non-empty layer name other than "other" and at least one non-empty pattern without whitespace; a
// user rule may name a built-in layer to extend it.
func NewLayers(user []LayerRule) (*Layers, error) {
	l := &Layers{}
	seen := map[string]bool{}
	for i, r := range user {
		name := strings.TrimSpace(r.Layer)
		switch {
		case name == "":
			return nil, fmt.Errorf("layer %d: the name is empty: give the layer a name, e.g. name: my-cache", i+1)
		case name == LayerOther:
			return nil, fmt.Errorf("layer %d: %q is the name of what no rule claims: choose another name", i+1, LayerOther)
		case len(r.Patterns) == 0:
			return nil, fmt.Errorf("layer %q: no functions: list at least one function-name pattern, e.g. \"github.com/acme/cache.*\"", name)
		}
		cr, err := compileRule(name, r.Patterns)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", name, err)
		}
		l.rules = append(l.rules, cr)
		if !seen[name] && !isBuiltinLayer(name) {
			l.order = append(l.order, name)
		}
		seen[name] = true
	}
	for _, r := range defaultLayerRules() {
		cr, err := compileRule(r.Layer, r.Patterns)
		if err != nil {
			return nil, fmt.Errorf("built-in layer %q: %w", r.Layer, err)
		}
		l.rules = append(l.rules, cr)
	}
	l.order = append(l.order, builtinLayerOrder()...)
	return l, nil
}

// Order lists every layer Classify can return, user layers first: the table's rows.
func (l *Layers) Order() []string { return l.order }

func isBuiltinLayer(name string) bool {
	return slices.Contains(builtinLayerOrder(), name)
}

// compileRule turns globs into one anchored regexp.
func compileRule(layer string, patterns []string) (compiledRule, error) {
	alts := make([]string, 0, len(patterns))
	for _, p := range patterns {
		if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, " \t\n") {
			return compiledRule{}, fmt.Errorf("function pattern %q must be non-empty without spaces: a glob over full function names such as \"github.com/acme/cache.*\" ('*' matches anything)", p)
		}
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		alts = append(alts, strings.Join(parts, ".*"))
	}
	re, err := regexp.Compile("^(?:" + strings.Join(alts, "|") + ")$")
	if err != nil {
		return compiledRule{}, fmt.Errorf("cannot compile the function patterns: %w", err)
	}
	return compiledRule{layer: layer, re: re}, nil
}

// Frame is one function on a sample's stack: its full name and its source file as the profile
// records them.
type Frame struct {
	Function, File string
}

// Classify assigns a stack, leaf first, to a layer, and says whether the sample was spent in the
// allocator on that layer's behalf. The walk:
//
//  1. The leaf's run of runtime frames (package runtime, internal/runtime/..., runtime/internal/...,
//     syscall) is read first. A garbage-collector frame there (background mark workers, mark assists,
//     sweeping, write barriers: runtime.gc*, runtime.bgsweep, …) makes the sample GC and allocation
//     outright, whoever triggered it. An allocator frame (runtime.mallocgc*, runtime.memclr*, runtime.newobject,
//     runtime.growslice, the mcache/mheap, …) marks it as allocation; any other runtime frame as
//     scheduling and syscalls.
//  2. Then every frame from the leaf up is offered to the rules (a user rule before the built-in
//     ones at each frame); the first frame a rule claims decides the layer. A frame of the server's
//     own code (ownCode) is claimed by "server code" when no rule claims it.
//  3. When nothing claims a frame, the sample goes to GC and allocation when its leaf run was the
//     allocator, to scheduling and syscalls when it was other runtime code, else to other.
//
// So a syscall that net/http's write made is transport, a mallocgc that encoding/json called is
// serialise (alloc true), and the GC's background workers are GC and allocation.
func (l *Layers) Classify(stack []Frame) (layer string, alloc bool) {
	leafRun := 0
	fallback := ""
	for leafRun < len(stack) && isRuntimeFunc(stack[leafRun].Function) {
		fn := stack[leafRun].Function
		switch {
		case isGCFunc(fn):
			return LayerGC, false
		case isAllocFunc(fn):
			fallback = LayerGC
		case fallback == "":
			fallback = LayerScheduling
		}
		leafRun++
	}
	for i, f := range stack {
		if layer, ok := l.claim(f, i < leafRun); ok {
			return layer, fallback == LayerGC && layer != LayerGC
		}
	}
	if fallback != "" {
		return fallback, fallback == LayerGC
	}
	return LayerOther, false
}

// claim offers one frame to the rules in order; a runtime frame is offered to no built-in rule and is
// never the server's own code.
func (l *Layers) claim(f Frame, runtimeFrame bool) (string, bool) {
	for _, r := range l.rules {
		if r.re.MatchString(f.Function) {
			return r.layer, true
		}
	}
	if !runtimeFrame && !isRuntimeFunc(f.Function) && ownCode(f) {
		return LayerServer, true
	}
	return "", false
}

// ownCode is the heuristic for "the server's own code" of any Go target: package main, or a package
// whose path starts with a domain (a dot in its first element, so not the standard library) and
// whose source file is not a dependency's: not in the module cache or a trimpath'd dependency (the
// path holds module@version) and not vendored. A dependency replaced by a local directory counts as
// own code. Frames with no file recorded are never own code.
func ownCode(f Frame) bool {
	pkg := funcPackage(f.Function)
	if pkg == "main" {
		return true
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") || f.File == "" {
		return false
	}
	return !strings.Contains(f.File, "@") && !strings.Contains(f.File, "/vendor/")
}

// funcPackage is the import path of a function name such as "github.com/a/b.(*T).M" or "net/http.Get".
func funcPackage(fn string) string {
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

func isRuntimeFunc(fn string) bool {
	pkg := funcPackage(fn)
	return pkg == "runtime" || pkg == "syscall" || strings.HasPrefix(pkg, "internal/runtime/") ||
		strings.HasPrefix(pkg, "runtime/internal/")
}

// isGCFunc is a runtime function of the garbage collector's own work.
func isGCFunc(fn string) bool {
	return hasAnyPrefix(fn, "runtime.gc", "runtime.(*gc", "runtime.GC", "runtime.bgsweep", "runtime.bgscavenge",
		"runtime.markroot", "runtime.scanobject", "runtime.scanblock", "runtime.scanstack", "runtime.greyobject",
		"runtime.wbBuf", "runtime.bulkBarrier", "runtime.sweepone", "runtime.tryDeferToSpanScan", "runtime.scanSpan")
}

// isAllocFunc is a runtime function of the allocator.
func isAllocFunc(fn string) bool {
	return hasAnyPrefix(fn, "runtime.mallocgc", "runtime.memclr", "runtime.newobject", "runtime.newarray",
		"runtime.makeslice", "runtime.growslice", "runtime.makemap", "runtime.makechan", "runtime.(*mcache)",
		"runtime.(*mcentral)", "runtime.(*mheap)", "runtime.(*mspan)", "runtime.(*pageAlloc)", "runtime.heapSetType",
		"runtime.writeHeapBits", "runtime.(*writeHeapBits)", "runtime.nextFreeFast", "runtime.rawstring",
		"runtime.rawbyteslice", "runtime.rawruneslice", "runtime.concatstring", "runtime.slicebytetostring",
		"runtime.stringtoslice", "runtime.convT", "runtime.deductAssistCredit", "runtime.profilealloc",
		"runtime.mProf_Malloc", "runtime.(*sweepLocked)", "runtime.sysAlloc", "runtime.(*fixalloc)",
		"runtime.persistentalloc", "runtime.publicationBarrier", "runtime.newMarkBits", "runtime.newAllocBits")
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
