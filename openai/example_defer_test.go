package openai_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/mcphost/mcphost/toolsearch"
)

// A Responses API request with OpenAI's hosted tool search (gpt-5.4 and
// later): list_notes stays loaded, the other tools are deferred.
func ExampleDeferredResponsesTools() {
	// In an agent: session.Tools().
	reqTools := []any{openai.HostedToolSearch()}
	for _, t := range openai.DeferredResponsesTools(tools, toolsearch.Names("mcp__notes__list_notes")) {
		reqTools = append(reqTools, t)
	}
	b, _ := json.MarshalIndent(reqTools, "", " ")
	fmt.Println(string(b))

	// The response's tool_search_output names what the search loaded;
	// LoadedTools maps it back to the session's tools.
	var out openai.ToolSearchOutput
	_ = json.Unmarshal([]byte(`{"type":"tool_search_output","execution":"server","tools":[{"type":"function","name":"mcp__web__fetch"}]}`), &out)
	for _, t := range openai.LoadedTools(out, tools) {
		fmt.Println("loaded:", t.Name, t.Decision)
	}
	// Output:
	// [
	//  {
	//   "type": "tool_search"
	//  },
	//  {
	//   "type": "function",
	//   "name": "mcp__notes__list_notes",
	//   "description": "List the notes.",
	//   "parameters": {
	//    "type": "object",
	//    "properties": {
	//     "query": {
	//      "type": [
	//       "string",
	//       "null"
	//      ]
	//     }
	//    },
	//    "required": [
	//     "query"
	//    ],
	//    "additionalProperties": false
	//   },
	//   "strict": true
	//  },
	//  {
	//   "type": "function",
	//   "name": "mcp__web__fetch",
	//   "description": "Fetch a URL.",
	//   "parameters": {
	//    "type": "object",
	//    "properties": {
	//     "url": {
	//      "type": "string",
	//      "format": "uri"
	//     }
	//    },
	//    "required": [
	//     "url"
	//    ],
	//    "additionalProperties": false
	//   },
	//   "strict": false,
	//   "defer_loading": true
	//  }
	// ]
	// loaded: mcp__web__fetch approval
}

// A client-executed tool search: the agent runs mcphost's own search
// (package toolsearch) when the model asks, and answers with the
// definitions to load. The model then calls a loaded tool by name, and the
// agent passes that call to Session.Call, with every check it makes.
func ExampleClientToolSearch() {
	idx := toolsearch.New(func() []mcphost.Tool { return tools }) // session.Tools
	loader, _ := idx.NewLoader("openai")
	search := toolsearch.SearchTool()
	reqTools := []any{openai.ClientToolSearch(search.Description, search.Schema)}
	for _, t := range openai.DeferredResponsesTools(tools, nil) {
		reqTools = append(reqTools, t)
	}

	// The model's tool_search_call, from the response's output.
	var call openai.ToolSearchCall
	_ = json.Unmarshal([]byte(`{"type":"tool_search_call","call_id":"call_7","execution":"client","arguments":{"query":"fetch a web page","limit":2}}`), &call)
	found, err := loader.Find(call.Arguments)
	if err != nil {
		// Tell the model (openai.FunctionCallError) and let it retry.
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(openai.ToolSearchOutputItem(call.CallID, found))
	fmt.Println(string(b))
	// Output:
	// {"type":"tool_search_output","call_id":"call_7","execution":"client","tools":[{"type":"function","name":"mcp__web__fetch","description":"Fetch a URL.","parameters":{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"],"additionalProperties":false},"strict":false}]}
}
