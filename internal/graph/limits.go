package graph

import (
	"context"
	"math"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Defaults of the query limits, applied by NewHandler to zero Options fields.
const (
	// DefaultMaxDepth is the deepest selection nesting, in field levels,
	// accepted when Options.MaxDepth is zero. The experiment's deepest query
	// is 2 levels and the standard GraphiQL introspection query is 13 (its
	// TypeRef fragment nests ofType seven times), so 15 refuses only queries
	// built to be deep.
	DefaultMaxDepth = 15
	// DefaultMaxComplexity is the largest complexity (gqlgen's figure, one
	// point per field summed over the whole operation, aliases and
	// fragments included, except that introspection fields count too)
	// accepted when Options.MaxComplexity is zero. The experiment's
	// queries cost at most 4 and the standard GraphiQL introspection query
	// costs 181 (TestIntrospectionComplexity).
	DefaultMaxComplexity = 1000
	// DefaultMaxAliases is the largest number of aliased fields in one
	// operation (fragments expanded: a fragment's aliases count at every
	// spread) accepted when Options.MaxAliases is zero. The experiment's
	// queries and the standard introspection query have none; aliases are
	// how one small request asks for the same expensive field thousands of
	// times (issue 10: 15,000 aliased __schema fields, a 33 MB response).
	DefaultMaxAliases = 100
)

// Extension codes of the limit errors. COMPLEXITY_LIMIT_EXCEEDED is gqlgen's
// own (extension.ComplexityLimit). None is registered as a protocol error
// (registration is a process-wide map), so over HTTP all answer 200 with the
// error and no data, as gqlgen's complexity limit does.
const (
	errDepthLimit      = "DEPTH_LIMIT_EXCEEDED"
	errAliasLimit      = "ALIAS_LIMIT_EXCEEDED"
	errComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"
)

// queryLimits is a gqlgen extension refusing operations nested deeper than
// maxDepth field levels, with more than maxAliases aliased fields, or
// costlier than maxComplexity (a non-positive limit is not checked). It runs
// after parsing and validation, before anything executes, like gqlgen's
// extension.ComplexityLimit.
//
// It measures complexity itself rather than through extension.ComplexityLimit
// for two reasons. gqlgen's complexity.Calculate walks a fragment again at
// every spread: a 2 KB document of 30 fragments each spreading the next
// twice costs 2^30 walks, minutes of CPU per request, before any limit
// applies (measured: 58 ms at 18 fragments, doubling with each); queryLimits
// measures each fragment once. And gqlgen prices a __schema field, with
// everything under it, at 0: one 979 KB request of 15,000 aliased
// __schema { types { name fields { name args { name } } } } cost 0 and
// answered 33 MB after 11 s of CPU (issue 10). queryLimits prices
// introspection fields like any other; otherwise its figure is gqlgen's
// (TestComplexityMatchesGqlgen).
type queryLimits struct {
	maxDepth, maxAliases, maxComplexity int
	es                                  graphql.ExecutableSchema // set by Validate
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*queryLimits)(nil)

// ExtensionName implements graphql.HandlerExtension.
func (*queryLimits) ExtensionName() string { return "QueryLimits" }

// Validate implements graphql.HandlerExtension; it keeps the schema, whose
// complexity functions price the fields.
func (l *queryLimits) Validate(es graphql.ExecutableSchema) error {
	l.es = es
	return nil
}

// MutateOperationContext implements graphql.OperationContextMutator: it
// measures the operation and refuses it, naming the measured value and the
// limit, when the depth, the aliases or the complexity is over its limit
// (checked in that order: only the first is reported).
func (l *queryLimits) MutateOperationContext(ctx context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	if oc.Operation == nil {
		return nil
	}
	m := measureOperation(ctx, l.es, oc.Doc, oc.Operation, oc.Variables)
	var err *gqlerror.Error
	switch {
	case l.maxDepth > 0 && m.depth > l.maxDepth:
		err = gqlerror.Errorf("query depth %d exceeds the limit of %d", m.depth, l.maxDepth)
		errcode.Set(err, errDepthLimit)
	case l.maxAliases > 0 && m.aliases > l.maxAliases:
		err = gqlerror.Errorf("operation has %d aliased fields, which exceeds the limit of %d", m.aliases, l.maxAliases)
		errcode.Set(err, errAliasLimit)
	case l.maxComplexity > 0 && m.complexity > l.maxComplexity:
		err = gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", m.complexity, l.maxComplexity)
		errcode.Set(err, errComplexityLimit)
	}
	return err
}

// measure is the size of a selection set.
type measure struct {
	// depth is how many field levels the selections nest: 1 for { add }, 2
	// for { donut(id: 1) { id } }. Fragment spreads and inline fragments add
	// no level of their own; their fields count where they are spread.
	// Introspection fields count like any other; @skip and @include are
	// ignored, so the depth is an upper bound whatever the variables.
	depth int
	// aliases is the number of fields selected under an alias other than
	// their name, fragments expanded (a fragment's aliases count at each
	// spread), saturating at math.MaxInt.
	aliases int
	// complexity is gqlgen's complexity.Calculate of the selections (with
	// its default options: scalars cost 1, nothing is ignored), except that
	// a field of type __Schema is priced like any other field (1 plus its
	// selections) where gqlgen prices it 0; saturating at math.MaxInt.
	complexity int
}

// measureOperation measures op, a validated operation of doc, with vars as
// its variables. es prices fields with the schema's complexity functions; a
// nil es (or an unvalidated document) counts every field as 1 plus its
// children.
//
// Each named fragment is measured once and remembered, so a document whose
// fragments spread each other many times costs time linear in its size, not
// exponential; a fragment spread inside itself (a cycle, which validation
// already rejects) adds nothing rather than recursing for ever.
func measureOperation(ctx context.Context, es graphql.ExecutableSchema, doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) measure {
	w := walker{es: es, doc: doc, vars: vars}
	if es != nil {
		w.schema = es.Schema()
	}
	return w.selectionSet(ctx, op.SelectionSet)
}

// walker measures selection sets for measureOperation.
type walker struct {
	es     graphql.ExecutableSchema
	schema *ast.Schema
	doc    *ast.QueryDocument
	vars   map[string]any
	// fragments holds each measured fragment's measure, and measuring for
	// a fragment being measured (so a spread reaching it again is a
	// cycle). Allocated at the first spread: most operations have none.
	fragments map[string]fragmentMeasure
}

type fragmentMeasure struct {
	measure
	measuring bool
}

func (w *walker) selectionSet(ctx context.Context, set ast.SelectionSet) measure {
	var m measure
	for _, sel := range set {
		var d, a, c int
		switch s := sel.(type) {
		case *ast.Field:
			child := w.selectionSet(ctx, s.SelectionSet)
			d, a, c = 1+child.depth, child.aliases, w.fieldComplexity(ctx, s, child.complexity)
			if s.Alias != "" && s.Alias != s.Name {
				a = addSat(a, 1)
			}
		case *ast.InlineFragment:
			child := w.selectionSet(ctx, s.SelectionSet)
			d, a, c = child.depth, child.aliases, child.complexity
		case *ast.FragmentSpread:
			child := w.fragment(ctx, s)
			d, a, c = child.depth, child.aliases, child.complexity
		}
		m.depth = max(m.depth, d)
		m.aliases = addSat(m.aliases, a)
		m.complexity = addSat(m.complexity, c)
	}
	return m
}

func (w *walker) fragment(ctx context.Context, s *ast.FragmentSpread) measure {
	if f, ok := w.fragments[s.Name]; ok {
		return f.measure // zero while measuring: a cycle adds nothing
	}
	def := s.Definition // set by validation
	if def == nil && w.doc != nil {
		def = w.doc.Fragments.ForName(s.Name)
	}
	if def == nil {
		return measure{} // an unknown fragment: validation reports it
	}
	if w.fragments == nil {
		w.fragments = make(map[string]fragmentMeasure)
	}
	w.fragments[s.Name] = fragmentMeasure{measuring: true}
	m := w.selectionSet(ctx, def.SelectionSet)
	w.fragments[s.Name] = fragmentMeasure{measure: m}
	return m
}

// fieldComplexity prices field f whose selections cost child, as gqlgen's
// complexity walker does: the schema's complexity function when it has one
// (the most expensive implementor's for an interface field), else 1 plus
// the selections. Unlike gqlgen's walker it prices a field of type __Schema
// too (introspection types have no complexity functions, so 1 plus the
// selections): gqlgen skips it, which let introspection past the limit.
func (w *walker) fieldComplexity(ctx context.Context, f *ast.Field, child int) int {
	if w.schema == nil || f.Definition == nil || f.ObjectDefinition == nil {
		return addSat(1, child)
	}
	typ := w.schema.Types[f.Definition.Type.Name()]
	if typ == nil {
		return addSat(1, child)
	}
	switch typ.Kind {
	case ast.Object, ast.Interface, ast.Union:
	default:
		child = 0 // gqlgen does not walk below a leaf
	}
	args := f.ArgumentMap(w.vars)
	if f.ObjectDefinition.Kind != ast.Interface {
		return w.cost(ctx, f.ObjectDefinition.Name, f.Name, child, args)
	}
	most := 0
	for _, impl := range w.schema.GetPossibleTypes(f.ObjectDefinition) {
		most = max(most, w.cost(ctx, impl.Name, f.Name, child, args))
	}
	return most
}

// cost is the price of field on typeName: its complexity function's, when
// the schema has one returning at least 1, else 1 plus child.
func (w *walker) cost(ctx context.Context, typeName, field string, child int, args map[string]any) int {
	if c, ok := w.es.Complexity(ctx, typeName, field, child, args); ok && c >= 1 {
		return c
	}
	return addSat(1, child)
}

// addSat adds two complexities, ignoring a negative one and saturating at
// math.MaxInt, as gqlgen's complexity package does, so that no query can
// overflow its way under the limit.
func addSat(a, b int) int {
	switch {
	case a < 0 && b < 0:
		return 1
	case a < 0:
		return b
	case b < 0:
		return a
	case a > math.MaxInt-b:
		return math.MaxInt
	}
	return a + b
}
