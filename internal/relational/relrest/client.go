package relrest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/soakd/soakd/internal/relational"
)

// Chatty plays a chatty REST client: it runs steps against base (the
// target's URL, without a trailing slash) one call at a time, attaching
// each answer to the item it was asked for, and returns the assembled tree
// (decoded JSON: the first call's data with everything attached) and how
// many calls it made. A non-200 answer ends it with an error quoting it.
func Chatty(ctx context.Context, client *http.Client, base string, steps []relational.ChattyStep) (any, int, error) {
	if len(steps) == 0 || steps[0].From != -1 {
		return nil, 0, fmt.Errorf("a chatty operation starts with one step whose from is -1")
	}
	calls := 0
	get := func(path string) (any, error) {
		calls++
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
		}
		var v struct{ Data any }
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		return v.Data, nil
	}
	items := make([][]map[string]any, len(steps))
	collect := func(k int, v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					items[k] = append(items[k], m)
				}
			}
		case map[string]any:
			items[k] = append(items[k], x)
		}
	}
	root, err := get(steps[0].Path)
	if err != nil {
		return nil, calls, err
	}
	collect(0, root)
	for k, s := range steps[1:] {
		k++
		if s.From < 0 || s.From >= k {
			return nil, calls, fmt.Errorf("chatty step %d reads step %d, which does not come before it", k, s.From)
		}
		for _, it := range items[s.From] {
			id, ok := it[s.IDField].(float64)
			if !ok {
				return nil, calls, fmt.Errorf("chatty step %d: an item of step %d has no numeric %q", k, s.From, s.IDField)
			}
			v, err := get(strings.ReplaceAll(s.Path, "{id}", strconv.FormatInt(int64(id), 10)))
			if err != nil {
				return nil, calls, err
			}
			it[s.Attach] = v
			collect(k, v)
		}
	}
	return root, calls, nil
}
