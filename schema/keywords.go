package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"
	"strings"
)

// A dialect is a JSON Schema draft, named by a schema's "$schema". Only
// what a dialect's keywords mean matters here: a keyword the dialect does
// not define is ignored by a validator of that dialect, so this package
// drops it wherever it rewrites a schema, which keeps the meaning exact.
type dialect uint8

const (
	// draft2020 is JSON Schema 2020-12, the default when "$schema" is
	// absent (as the MCP specification says for input schemas).
	draft2020 dialect = iota
	// draft2019 is 2019-09. Its keywords mean what 2020-12's do except
	// the tuple form of items and additionalItems, which are rewritten to
	// prefixItems and items for the validator, and $recursiveRef, which
	// is not supported.
	draft2019
	// draft07 is draft-07, the dialect of zod-to-json-schema and so of
	// most npm MCP servers. The validator supports it natively.
	draft07
	// draft06 is validated as draft-07, without the keywords draft-07
	// added (if, then, else), which draft-06 ignores.
	draft06
)

func (d dialect) String() string {
	switch d {
	case draft2019:
		return "2019-09"
	case draft07:
		return "draft-07"
	case draft06:
		return "draft-06"
	default:
		return "2020-12"
	}
}

// The "$schema" values github.com/google/jsonschema-go validates (it
// compares them as strings, so they are written exactly).
const (
	uriDraft07   = "http://json-schema.org/draft-07/schema#"
	uriDraft2020 = "https://json-schema.org/draft/2020-12/schema"
)

// dialectOf names the dialect of a "$schema" value. The scheme (http or
// https) and an empty fragment do not matter: the meta-schemas are
// published under both, and servers write either.
func dialectOf(uri string) (dialect, bool) {
	s := strings.TrimSuffix(uri, "#")
	switch {
	case strings.HasPrefix(s, "https://"):
		s = s[len("https://"):]
	case strings.HasPrefix(s, "http://"):
		s = s[len("http://"):]
	default:
		return 0, false
	}
	switch s {
	case "json-schema.org/draft/2020-12/schema":
		return draft2020, true
	case "json-schema.org/draft/2019-09/schema":
		return draft2019, true
	case "json-schema.org/draft-07/schema":
		return draft07, true
	case "json-schema.org/draft-06/schema":
		return draft06, true
	}
	return 0, false
}

// checkURI is the "$schema" the validator is given for a dialect.
func (d dialect) checkURI() string {
	if d == draft07 || d == draft06 {
		return uriDraft07
	}
	return uriDraft2020
}

// Shared leaves (see falseSchema) for checkURIValue: every closed form
// names its dialect.
var (
	draft07URIValue   = strValue(uriDraft07)
	draft2020URIValue = strValue(uriDraft2020)
)

// checkURIValue is checkURI as a value, shared: it must not be changed.
func (d dialect) checkURIValue() *jsontree.Value {
	if d.checkURI() == uriDraft07 {
		return draft07URIValue
	}
	return draft2020URIValue
}

// class says what a keyword's value is.
type class uint8

const (
	clUnknown    class = iota
	clSchema           // one subschema
	clSchemaList       // an array of subschemas
	clSchemaMap        // an object of subschemas
	clItems            // a subschema, or (draft-07, 2019-09) an array of them
	clDeps             // draft-07 dependencies: subschemas or arrays of names
	clNumber           // any number
	clPositive         // a number above zero (multipleOf)
	clCount            // a non-negative integer
	clString           // a string
	clBool             // a boolean
	clNames            // an array of strings (required)
	clNamesMap         // an object of arrays of strings (dependentRequired)
	clType             // a type name or an array of them
	clArray            // any array (enum)
	clAny              // any value (const)
	clRef              // a reference string
	clContainer        // $defs and definitions: subschemas reached only by $ref
	clAnnotation       // no validation meaning: title, description, default, ...
	clIdentity         // $schema, $id, $anchor, $dynamicAnchor, $vocabulary
)

// keyword returns the class of name in dialect d, or clUnknown when d does
// not define it (a validator of d ignores it).
func keyword(name string, d dialect) class {
	switch name {
	// In every dialect this package supports.
	case "properties", "patternProperties":
		return clSchemaMap
	case "additionalProperties", "not":
		return clSchema
	case "allOf", "anyOf", "oneOf":
		return clSchemaList
	case "items":
		return clItems
	case "type":
		return clType
	case "enum":
		return clArray
	case "multipleOf":
		return clPositive
	case "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum":
		return clNumber
	case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
		return clCount
	case "pattern":
		return clString
	case "uniqueItems":
		return clBool
	case "required":
		return clNames
	case "$ref":
		return clRef
	case "$schema", "$id":
		return clIdentity
	case "title", "description", "default", "format", "examples":
		return clAnnotation
	// draft-06 added these.
	case "const":
		return clAny
	case "contains", "propertyNames":
		return clSchema
	case "definitions":
		// A container in every dialect: 2019-09 renamed it $defs, but a
		// $ref that points into it still resolves, as a JSON pointer.
		return clContainer
	case "$defs":
		return clContainer
	}
	if d == draft06 {
		return clUnknown
	}
	switch name {
	// draft-07 added these.
	case "if", "then", "else":
		return clSchema
	case "$comment", "readOnly", "writeOnly", "contentEncoding", "contentMediaType":
		return clAnnotation
	}
	if d == draft07 || d == draft06 {
		switch name {
		case "additionalItems":
			return clSchema
		case "dependencies":
			return clDeps
		}
		return clUnknown
	}
	switch name {
	// 2019-09 and 2020-12.
	case "dependentSchemas":
		return clSchemaMap
	case "dependentRequired":
		return clNamesMap
	case "unevaluatedItems", "unevaluatedProperties":
		return clSchema
	case "minContains", "maxContains":
		return clCount
	case "deprecated", "contentSchema":
		return clAnnotation
	case "$anchor", "$vocabulary":
		return clIdentity
	}
	if d == draft2019 {
		switch name {
		case "additionalItems":
			return clSchema
		case "$recursiveRef":
			return clRef
		case "$recursiveAnchor":
			return clIdentity
		}
		return clUnknown
	}
	switch name {
	case "prefixItems":
		return clSchemaList
	case "$dynamicRef":
		return clRef
	case "$dynamicAnchor":
		return clIdentity
	}
	return clUnknown
}

// inPlace reports whether a keyword applies its subschemas to the value the
// schema applies to (rather than to a part of it). Subschemas under these
// are "left as written": closing an object there could refuse what another
// branch declares, or (under oneOf and not) admit what was refused.
func inPlace(name string) bool {
	switch name {
	case "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
		"dependentSchemas", "dependencies", "$ref", "$dynamicRef", "$recursiveRef":
		return true
	}
	return false
}

// annotationOnly reports whether a keyword has no validation meaning at a
// schema that has a $ref: such siblings may be folded into an inlined
// reference without changing what is valid.
func annotationOnly(name string, d dialect) bool {
	switch keyword(name, d) {
	case clAnnotation, clContainer:
		return true
	case clIdentity:
		return name != "$id"
	}
	return false
}

// The JSON Schema type names.
func isTypeName(s string) bool {
	switch s {
	case "null", "boolean", "object", "array", "number", "string", "integer":
		return true
	}
	return false
}

// forType reports whether a keyword constrains only values of JSON type t
// (so that it can move into the branch for t when a type union is split).
// Keywords that constrain every type (enum, const, the applicators) report
// false.
func forType(name, t string) bool {
	switch name {
	case "minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType", "contentSchema":
		return t == "string"
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		return t == "number" || t == "integer"
	case "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains",
		"minItems", "maxItems", "uniqueItems", "unevaluatedItems":
		return t == "array"
	case "properties", "patternProperties", "additionalProperties", "required", "propertyNames",
		"minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
		"unevaluatedProperties":
		return t == "object"
	}
	return false
}
