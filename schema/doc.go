// Package schema prepares the input schemas of MCP tools for a model and
// checks the arguments a model sends before a server sees them.
//
// Model providers decode tool arguments strictly only for a subset of JSON
// Schema, in which every object is closed and lists every property as
// required. Hosts commonly either send MCP tools non-strict (the model may
// send anything) or force them into that subset in ways that change what
// the tool means: an optional field made mandatory, an open map closed.
// This package does neither. [Close] makes, from what the server sent:
//
//   - the strict form, when the tool's meaning can be kept in it: every
//     object closed ("additionalProperties": false), every property
//     required, and each property that was optional made nullable (a type
//     list with "null", or an anyOf with a null branch). A null the model
//     sends for such a property is removed again by [Closed.FromModel], so
//     the server sees exactly what it would have seen had the field been
//     omitted. Nulls the original admits, bounds, enums, formats and
//     descriptions stay as written; local $refs are inlined.
//   - otherwise the closed form: the original with its objects closed
//     where that refuses nothing but undeclared properties, optional
//     properties still optional; and a problem, "<json pointer>:
//     <reason>", saying why there is no strict form or why a provider
//     would not take it.
//
// For example, a read_file tool like the filesystem server's (trimmed)
//
//	{"type": "object",
//	 "properties": {"path": {"type": "string"}, "head": {"type": "number"}},
//	 "required": ["path"]}
//
// has the strict form
//
//	{"type": "object",
//	 "properties": {"path": {"type": "string"}, "head": {"type": ["number", "null"]}},
//	 "required": ["path", "head"], "additionalProperties": false}
//
// The model, made to send every property, sends {"path": "a", "head":
// null} for "no head"; FromModel turns that into {"path": "a"}, which is
// what the server expects. Making head required without making it
// nullable would have forced the model to invent a number; leaving the
// schema non-strict lets it send {"path": "a", "haed": 3}, which Check
// refuses ("did you mean \"head\"?").
//
// # Where meaning cannot be kept
//
// The strict form is refused, the tool offered in its closed form, and
// the reason given for:
//
//   - an optional property whose own schema admits null: omitting it and
//     sending null mean different things to the server, and in a strict
//     form, where every property is sent, null already stands for
//     "omitted";
//   - a map (additionalProperties a schema or true, patternProperties) or
//     a free-form object (no declared properties): closing it would refuse
//     the entries it exists for. Such objects are not closed in the closed
//     form either. (At the root, "properties": {} declares a tool without
//     arguments, as the SDKs write it, and is closed.);
//   - an untyped value ({}, or a schema with neither type nor enum), which
//     strict decoding cannot produce;
//   - a root that is not an object;
//   - a required property that is not declared: a closed object would
//     refuse it;
//   - compositions whose branches would have to change: allOf (its
//     branches see the whole value, so closing one refuses what another
//     declares); a oneOf whose branches may overlap (offered as anyOf it
//     would admit a value matching two of them); an anyOf or oneOf branch
//     that is an open object or has optional properties. A oneOf whose
//     branches are provably disjoint is offered as the anyOf it equals.
//     Nothing under a composition is closed in the closed form either;
//   - a recursive $ref (references are inlined, and recursion cannot be),
//     or a $ref with constraints beside it (2019-09 and later apply both).
//
// # Profiles
//
// A strict form is ready for a [Profile] when it uses only what that
// provider's strict mode accepts; anything else makes the provider refuse
// the whole request. [OpenAI] (the default: [Closed.Strict] and
// [Closed.Problem] are about it) and [Anthropic] are known, with the
// documented keyword subsets, formats, and size limits; the sources and
// the assumptions made where they are silent are written beside the
// rules, in profile.go. [Closed.For] returns the form to offer a given
// provider.
//
// Each profile has its own strict form. Anthropic's strict tool use takes
// optional properties, so its form leaves them optional (and an optional
// property that admits null is no problem there) where OpenAI's makes
// them required and nullable. And a constraint a profile does not accept
// but that only narrows values (minLength, maxLength, uniqueItems, a
// format it lacks; for Anthropic also minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, maxItems, minItems above 1 and a pattern
// with a word boundary) is left out of that profile's form and said in
// the description of the schema it was on, e.g. "Search terms. (at least
// 3 characters)". Check, which validates every call against the original,
// still refuses what it refuses ("/query: must be at least 3 characters
// long; got 2"): what the host accepts from any strict form, once
// FromModel has removed its nulls, is exactly what the original admits.
// Constraints that change the shape of valid values, and patterns Go's
// regexp cannot compile, stay problems.
//
// # Checking arguments
//
// [Closed.Check] validates the arguments bound for the server against the
// tool's own schema as closed, with github.com/google/jsonschema-go, and
// refuses a wrong type, a missing required field, an unknown field, an
// enum miss or a bound with an [ArgumentError] written for the model to
// correct its call. It reads the dialect a schema names: 2020-12 (also
// when "$schema" is absent), 2019-09, draft-07 (how zod-to-json-schema
// writes the npm servers' schemas, tuples and $ref-siblings included) and
// draft-06. What the validator cannot take as written is rewritten to mean
// the same (counts past 32 bits, \uXXXX in patterns, 2019-09 tuples), or,
// for a pattern RE2 cannot compile (lookaround, backreferences), left out
// and listed in [Closed.Unchecked]: the server still enforces its own
// schema. So is a $ref to a schema outside the document (a remote or
// relative URI, allowed in MCP since 2026-07-28): it is never fetched, the
// value there is checked as anything, and no strict form is made. A
// schema that cannot be read surely (an unknown dialect, an
// unresolvable $ref, a malformed keyword, a name given twice or
// an unpaired surrogate escape, a reference loop no validator can finish) makes Check refuse every call
// with [ErrUncheckable], and [Closed.CheckProblem] says so from discovery
// on: a check that guessed could pass what the tool refuses.
//
// Arguments are refused, too, when parsers could read them differently: a
// field given twice, an unpaired surrogate escape, text that is not UTF-8.
// The server receives what was checked, byte for byte as the model wrote
// it, less the nulls FromModel removes.
//
// Property names are kept exactly as the server wrote them in every form;
// messages and problems quote them so that control and formatting
// characters cannot disguise the text around them.
package schema
