package anthropic

import (
	"bytes"
	"encoding/json"
)

// strictBudget is what is left of one request's limits on strict tools.
type strictBudget struct {
	tools, optional, unions int
}

// take reports whether a tool with this schema fits in what is left, and if
// so counts it.
func (b *strictBudget) take(schema json.RawMessage) bool {
	optional, unions, ok := count(schema)
	if !ok || b.tools < 1 || optional > b.optional || unions > b.unions {
		return false
	}
	b.tools--
	b.optional -= optional
	b.unions -= unions
	return true
}

// count returns how many optional properties and how many schemas with
// anyOf or a type list a schema has, as Anthropic counts them for strict
// tools. It walks every object of the JSON, keywords and values alike, so
// the counts are an upper bound: something that only looks like a schema (a
// property named "anyOf", say) counts too, which at worst sends a tool
// non-strict, never a request over the limits. ok is false for a schema
// that is not JSON.
func count(schema json.RawMessage) (optional, unions int, ok bool) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return 0, 0, false
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			if _, has := v["anyOf"]; has {
				unions++
			}
			if types, isList := v["type"].([]any); isList && len(types) > 1 {
				unions++
			}
			if props, isObj := v["properties"].(map[string]any); isObj {
				required := map[string]bool{}
				if list, isList := v["required"].([]any); isList {
					for _, r := range list {
						if s, isStr := r.(string); isStr {
							required[s] = true
						}
					}
				}
				for name := range props {
					if !required[name] {
						optional++
					}
				}
			}
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return optional, unions, true
}
