// Command mcpgo is a small MCP server built on github.com/mark3labs/mcp-go,
// for mcphost's interop tests (../../../interop). It serves its tools over
// stdio one a page (and, an mcp-go quirk, an empty page last), so a client
// must follow nextCursor to see them all. It also exercises what differs
// between MCP implementations: hyphenated tool names, notifications sent in
// the middle of a call, a tool list that changes at run time, files written
// in the working directory, and a call that keeps the server alive after its
// input ends (mcp-go waits for its running handlers before it exits).
//
// It is its own module so that mcphost's go.mod does not depend on mcp-go.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// pageSize is as small as can be on purpose: the tests check that every
// page is read. mcp-go sends a nextCursor after every full page, so the last
// page is empty.
const pageSize = 1

func main() {
	s := server.NewMCPServer("mcpgo-interop", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithLogging(),
		server.WithPaginationLimit(pageSize),
		server.WithRecovery(),
	)
	s.AddTool(mcp.NewTool("reverse-text",
		mcp.WithDescription("Reverse a text, rune by rune."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to reverse")),
		mcp.WithReadOnlyHintAnnotation(true),
	), reverseText)
	s.AddTool(mcp.NewTool("add_numbers",
		mcp.WithDescription("Add two numbers."),
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
		mcp.WithReadOnlyHintAnnotation(true),
	), addNumbers)
	s.AddTool(mcp.NewTool("write-file",
		mcp.WithDescription("Write a text file in the working directory."),
		mcp.WithString("name", mcp.Required(), mcp.Description("a plain file name, no directories")),
		mcp.WithString("text", mcp.Required()),
	), writeFile)
	s.AddTool(mcp.NewTool("get-env",
		mcp.WithDescription("Return the names of the server's environment variables, sorted, one a line."),
		mcp.WithReadOnlyHintAnnotation(true),
	), getEnv)
	s.AddTool(mcp.NewTool("notify-then-echo",
		mcp.WithDescription("Send a log message (and progress, if the call asked for it), then echo the message."),
		mcp.WithString("message", mcp.Required()),
	), notifyThenEcho)
	s.AddTool(mcp.NewTool("block",
		mcp.WithDescription("Send a log message, then sleep for the given seconds without heeding cancellation, like a tool stuck in a blocking call."),
		mcp.WithNumber("seconds", mcp.Required()),
	), block)
	s.AddTool(mcp.NewTool("grow",
		mcp.WithDescription("Add a tool named extra-tool to this server's list; clients are told with notifications/tools/list_changed."),
	), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(mcp.NewTool("extra-tool", mcp.WithDescription("Added at run time by grow.")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("extra"), nil
			})
		return mcp.NewToolResultText("grown"), nil
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}

func reverseText(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	r := []rune(text)
	slices.Reverse(r)
	return mcp.NewToolResultText(string(r)), nil
}

func addNumbers(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := req.RequireFloat("a")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	b, err := req.RequireFloat("b")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(fmt.Sprint(a + b)), nil
}

func writeFile(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := req.RequireString("name")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if name != filepath.Base(name) || name == "." || name == ".." {
		return mcp.NewToolResultErrorf("%q is not a plain file name", name), nil
	}
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("wrote " + name), nil
}

func getEnv(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var names []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	return mcp.NewToolResultText(strings.Join(names, "\n")), nil
}

func notifyThenEcho(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	msg, err := req.RequireString("message")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	s := server.ServerFromContext(ctx)
	if s == nil {
		return mcp.NewToolResultError("no server in the call's context"), nil
	}
	// Sent raw rather than through SendLogMessageToClient, which drops
	// anything below the session's level (error, until the client sets
	// one): the point is that a client sees a notification mid-call.
	if err := s.SendNotificationToClient(ctx, "notifications/message", map[string]any{
		"level": "info", "logger": "mcpgo", "data": "about to echo " + msg,
	}); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		if err := s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progressToken": req.Params.Meta.ProgressToken, "progress": 1, "total": 1,
		}); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
	}
	return mcp.NewToolResultText(msg), nil
}

func block(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	secs, err := req.RequireFloat("seconds")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if s := server.ServerFromContext(ctx); s != nil {
		// Tells the client the call is running, so a test can act while
		// it is in flight.
		_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{
			"level": "info", "logger": "mcpgo", "data": "blocking",
		})
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	return mcp.NewToolResultText("unblocked"), nil
}
