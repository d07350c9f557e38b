package graph

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Limits on client input quoted back in GraphQL error messages.
const (
	// maxEchoBytes is how much of a malformed request body gqlgen's
	// "json request body could not be decoded" message quotes: gqlgen
	// quotes it whole (900 KB in, 900 KB out).
	maxEchoBytes = 120
	// maxErrorMessageBytes caps every other error message, which may quote
	// a name or value of any length from the query (Cannot query field
	// "…" on type "Query"); soakd's own messages are far shorter.
	maxErrorMessageBytes = 512
)

// decodeErrorPrefix starts gqlgen's message for a POST body that is not
// JSON, which ends with " body:" and the whole body.
const decodeErrorPrefix = "json request body could not be decoded: "

// presentError is gqlgen's default error presenter with the message cut by
// clipMessage, so no error sends a large input back.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	e := graphql.DefaultErrorPresenter(ctx, err)
	if m := clipMessage(e.Message); m != e.Message {
		cp := *e // the presented error may be shared: change a copy
		cp.Message = m
		e = &cp
	}
	return e
}

// clipMessage cuts the body quoted by gqlgen's decode error to
// maxEchoBytes, and any other message to maxErrorMessageBytes, each
// followed by "… (N bytes)".
func clipMessage(m string) string {
	if len(m) <= maxEchoBytes {
		return m
	}
	if strings.HasPrefix(m, decodeErrorPrefix) {
		if i := strings.Index(m, " body:"); i >= 0 {
			i += len(" body:")
			return m[:i] + clip(m[i:], maxEchoBytes)
		}
	}
	return clip(m, maxErrorMessageBytes)
}

// clip returns s when it is at most n bytes long, else its first n bytes
// (fewer, to end on a whole UTF-8 character) followed by "… (L bytes)", L
// being len(s): how error messages and close reasons quote client input
// without sending a large input back.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
