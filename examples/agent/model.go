package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mcphost/mcphost/openai"
)

// scriptedModel stands in for a model: it plays a fixed script of tool
// calls, one turn at a time, and ends with an answer that reads the results
// it got back. It checks the conversation the way an API would: every tool
// call of its previous turn must be answered by a tool message.
type scriptedModel struct {
	turn int
}

// script is what the model does, turn by turn.
var script = []openai.ChatToolCall{
	call("call_1", "mcp__notes__list_notes", `{"query":""}`),      // allowed: runs without asking
	call("call_2", "mcp__notes__add_note", `{"text":"buy milk"}`), // needs approval: a person is asked
	call("call_3", "mcp__notes__delete_note", `{"id":"1"}`),       // denied: never offered, refused
	call("call_4", "mcp__notes__add_note", `{"txt":5}`),           // bad arguments: refused before anyone is asked
	call("call_5", "mcp__notes__list_notes", `{"query":"milk"}`),  // allowed, after the tools changed
}

func call(id, name, args string) openai.ChatToolCall {
	return openai.ChatToolCall{ID: id, Type: "function", Function: openai.ChatFunctionCall{Name: name, Arguments: args}}
}

// Next returns the next turn of the script.
func (m *scriptedModel) Next(ctx context.Context, messages []openai.ChatMessage, tools []openai.ChatTool) (openai.ChatMessage, error) {
	if err := ctx.Err(); err != nil {
		return openai.ChatMessage{}, err
	}
	if err := answered(messages); err != nil {
		return openai.ChatMessage{}, err
	}
	if len(tools) == 0 {
		return openai.ChatMessage{}, errors.New("no tools offered")
	}
	if m.turn < len(script) {
		tc := script[m.turn]
		m.turn++
		return openai.ChatMessage{Role: "assistant", ToolCalls: []openai.ChatToolCall{tc}}, nil
	}
	added := "I noted that you need to buy milk."
	if r := reply(messages, "call_2"); strings.HasPrefix(r, "The call failed") {
		added = "I could not add the note: the call was not approved."
	}
	answer := added + " I could not clean up: deleting notes is denied by the config."
	return openai.ChatMessage{Role: "assistant", Content: []openai.ChatContentPart{{Type: "text", Text: answer}}}, nil
}

// answered checks that every tool call of the last assistant message has
// been answered by a tool message.
func answered(messages []openai.ChatMessage) error {
	last := -1
	for i, m := range messages {
		if m.Role == "assistant" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	for _, tc := range messages[last].ToolCalls {
		found := false
		for _, m := range messages[last+1:] {
			found = found || (m.Role == "tool" && m.ToolCallID == tc.ID)
		}
		if !found {
			return fmt.Errorf("tool call %s (%s) has no tool message answering it", tc.ID, tc.Function.Name)
		}
	}
	return nil
}

// reply returns the text of the tool message answering call id.
func reply(messages []openai.ChatMessage, id string) string {
	for _, m := range messages {
		if m.Role == "tool" && m.ToolCallID == id {
			var b strings.Builder
			for _, p := range m.Content {
				b.WriteString(p.Text)
			}
			return b.String()
		}
	}
	return ""
}
