package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost/mcphost/schema"
)

func Example() {
	// read_file, as @modelcontextprotocol/server-filesystem lists it.
	c, err := schema.Close(json.RawMessage(`{
	  "$schema": "http://json-schema.org/draft-07/schema#",
	  "type": "object",
	  "properties": {
	    "path": {"type": "string"},
	    "head": {"description": "If provided, returns only the first N lines of the file", "type": "number"}
	  },
	  "required": ["path"]
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println("strict:", c.Strict)
	fmt.Println("offer:", string(c.Schema))

	// The strict model sends every property; null for the one it omits.
	args, err := c.FromModel(json.RawMessage(`{"path": "notes.txt", "head": null}`))
	fmt.Println("to the server:", string(args), err)
	fmt.Println("check:", c.Check(args))

	// A slip is refused before the server sees it.
	fmt.Println("check:", c.Check(json.RawMessage(`{"path": "notes.txt", "haed": 3}`)))
	// Output:
	// strict: true
	// offer: {"type":"object","properties":{"path":{"type":"string"},"head":{"description":"If provided, returns only the first N lines of the file","type":["number","null"]}},"required":["path","head"],"additionalProperties":false}
	// to the server: {"path":"notes.txt"} <nil>
	// check: <nil>
	// check: invalid arguments: /haed: unknown field; did you mean "head"?
}

func ExampleClose_problem() {
	// GitHub's filter: omitting it keeps the saved filter, null clears it.
	c, _ := schema.Close(json.RawMessage(`{"type": "object", "properties": {
	  "filter": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}`))
	fmt.Println("strict:", c.Strict)
	fmt.Println(c.Problem)
	// Output:
	// strict: false
	// /properties/filter: optional property that admits null: omitting it and sending null mean different things, and a strict form (where every property is sent, null standing for omitted) cannot tell them apart
}
