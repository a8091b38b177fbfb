// Package strictlimit holds Anthropic's limits on the strict tools of one
// request ("Structured outputs", JSON Schema limitations,
// https://platform.claude.com/docs/en/build-with-claude/structured-outputs),
// in one place for the two packages that enforce them: schema, which finds
// a tool whose own strict form is over one (it can never be sent strict),
// and anthropic, which keeps a whole request within them. Anthropic
// refuses a request over any of them whole (HTTP 400).
package strictlimit

const (
	// AnthropicTools is the most tools one request may mark strict.
	AnthropicTools = 20
	// AnthropicOptional is the most optional properties the strict tools
	// of one request may have together.
	AnthropicOptional = 24
	// AnthropicUnions is the most schemas with anyOf or a type list the
	// strict tools of one request may have together.
	AnthropicUnions = 16
)
