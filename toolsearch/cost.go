package toolsearch

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/mcphost/mcphost/schema"
)

// Cost returns what t's definition costs in the model's context under
// profile ("openai" or "anthropic"): the bytes of the JSON that the
// profile's package sends for it (openai.ResponsesTools, the Responses
// API's form; Chat Completions wraps the same object in
// {"type":"function","function":{...}}, 13 bytes more; anthropic.Tools),
// and EstimateTokens of those bytes. A tool that is not offered (denied,
// withheld) is costed as if it were, so that a person deciding whether to
// offer it sees its price; a tool the agent sends costs its bytes on
// every turn.
//
// Both are estimates of what the model reads: providers render tool
// definitions into their own prompt format, which neither publishes, so
// the JSON sent is the nearest measure available offline. Cost fails only
// for an unknown profile or a schema that is not JSON.
func Cost(t mcphost.Tool, profile string) (bytes, tokens int, err error) {
	if t.Decision == mcphost.Deny {
		t.Decision = mcphost.Approval
	}
	t.Withheld = false
	var v any
	switch profile {
	case string(schema.OpenAI):
		v = openai.ResponsesTools([]mcphost.Tool{t})[0]
	case string(schema.Anthropic):
		v = anthropic.Tools([]mcphost.Tool{t})[0]
	default:
		return 0, 0, fmt.Errorf("toolsearch: unknown profile %q (want %q or %q)", profile, schema.OpenAI, schema.Anthropic)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0, 0, fmt.Errorf("toolsearch: cost of %s: %w", t.Name, err)
	}
	return len(b), EstimateTokens(b), nil
}

// EstimateTokens estimates how many tokens a model's tokenizer makes of
// text (usually JSON). It is a local heuristic, not a tokenizer: it counts
// pieces that the byte-pair encoders of current models tend to keep whole.
//
//   - A run of ASCII letters is split at lower-to-upper case changes
//     (camelCase); each part of n letters counts ceil(n/12): the encoders'
//     vocabularies hold most English words and identifier parts whole.
//   - A run of digits counts ceil(n/3): the encoders split numbers into
//     groups of up to three digits.
//   - A JSON escape (\n, \", \\, \/, \r, \t) counts one.
//   - Any other run of ASCII punctuation counts ceil(n/4): JSON's `":"`,
//     `","` and `{"` are single tokens in the common encoders.
//   - A single space before a letter is part of the word's token; any
//     other run of white space counts one.
//   - Any other character (outside ASCII) counts one; so does each byte of
//     invalid UTF-8.
//
// The two divisors were fitted to OpenAI's o200k_base encoding (GPT-4o,
// GPT-5) on the "openai" definitions of the 110 tools of the reference
// servers that package realservers starts. Measured against o200k_base
// (offline, with a tokenizer that is not part of this module), the
// estimate is, for those definitions, 0.8% over in sum, 2.1% off per
// tool on average and within 4.6% for 90% of them; for their "anthropic"
// definitions, which the fit did not see, 1.4% over in sum and within
// 4.8% for 90% (at most 9.9%); for other text it is within about 12%
// (this repository's README +9%, a Go source file +12%, a
// package-lock.json -7%). Anthropic does not publish Claude's tokenizer:
// for Claude it is an estimate whose error cannot be measured offline (the
// Messages API's count_tokens endpoint can measure it).
func EstimateTokens(text []byte) int {
	var n int
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isLetter(c):
			j := i + 1
			for j < len(text) && isLetter(text[j]) && !(isLower(text[j-1]) && isUpper(text[j])) {
				j++
			}
			n += ceilDiv(j-i, letterChunk)
			i = j
		case '0' <= c && c <= '9':
			j := i + 1
			for j < len(text) && '0' <= text[j] && text[j] <= '9' {
				j++
			}
			n += ceilDiv(j-i, 3)
			i = j
		case c == ' ' && i+1 < len(text) && isLetter(text[i+1]):
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j := i + 1
			for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
				j++
			}
			n++
			i = j
		case c == '\\' && i+1 < len(text) && strings.IndexByte(`nrt"\\/`, text[i+1]) >= 0:
			// A JSON escape, such as the \n of every line break of a
			// description, is one token.
			n++
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(text) && isPunct(text[j]) {
				j++
			}
			n += ceilDiv(j-i, punctChunk)
			i = j
		default:
			_, size := utf8.DecodeRune(text[i:])
			n++
			i += size
		}
	}
	return n
}

// letterChunk and punctChunk are the heuristic's two fitted constants
// (see EstimateTokens).
const (
	letterChunk = 12
	punctChunk  = 4
)

func isLower(c byte) bool  { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isLetter(c byte) bool { return isLower(c) || isUpper(c) }

// isPunct reports whether c is ASCII and neither a letter, a digit nor
// white space.
func isPunct(c byte) bool {
	return c < utf8.RuneSelf && c > ' ' && c != 0x7f && !isLetter(c) && !('0' <= c && c <= '9')
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
