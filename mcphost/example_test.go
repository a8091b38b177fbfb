package mcphost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/mcphost/mcphost/mcphost"
)

func ExampleParse() {
	// The agent's own config file: mcphost reads the [mcp.<name>] tables
	// and ignores the rest.
	config := `
model = "some-model"   # the agent's own setting

[mcp.notes]
command = ["bin/notes", "--db", "notes.db"]
allow = ["list_notes"]
deny = ["delete_note"]
call_timeout = "30s"
`
	servers, err := mcphost.Parse([]byte(config))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range servers {
		fmt.Println(s.Name, s.Command, "allow:", s.Allow, "deny:", s.Deny, "others:", s.Default)
		fmt.Println("call timeout:", s.CallTimeout, "startup timeout:", s.StartupTimeout, "max output:", s.MaxOutput)
	}
	// Output:
	// notes [bin/notes --db notes.db] allow: [list_notes] deny: [delete_note] others: approval
	// call timeout: 30s startup timeout: 30s max output: 262144
}

func ExampleParse_errors() {
	// Every problem is reported, each naming its table and key.
	_, err := mcphost.Parse([]byte(`
[mcp.notes]
command = ["notes-server"]
defualt = "deny"

[mcp.git]
command = ["git-server"]
`))
	fmt.Println(err)
	var cerr *mcphost.ConfigError
	if errors.As(err, &cerr) {
		fmt.Printf("first: table %s, key %q\n", cerr.Table, cerr.Key)
	}
	// Output:
	// config: [mcp.git]: "git" is reserved for the agent's own tools (fs, proc, git); choose another name
	// config: [mcp.notes] defualt: unknown key; the keys are allow, call_timeout, command, default, deny, env, env_pass, max_output, network, read, sandbox, startup_timeout, write
	// first: table mcp.git, key ""
}

func ExampleModelName() {
	name, err := mcphost.ModelName("my-notes", "list_notes")
	fmt.Println(name, err)

	server, tool, ok := mcphost.SplitModelName(name)
	fmt.Println(server, tool, ok)

	// A name that cannot be mapped is an error, never a rename that could
	// land on another tool's name.
	_, err = mcphost.ModelName("notes", "list notes")
	fmt.Println(err)
	// Output:
	// mcp__my_notes__list_notes <nil>
	// my-notes list_notes true
	// tool "list notes" of server notes cannot be named for a model: its name has characters outside [A-Za-z0-9_-]
}

func ExampleConnect() {
	config, err := os.ReadFile("agent.toml")
	if err != nil {
		log.Fatal(err)
	}
	servers, err := mcphost.Parse(config)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := mcphost.Connect(ctx, servers, mcphost.Options{
		Worktree:   ".",          // servers run here and may write only here
		ConfigFile: "agent.toml", // servers cannot write it
		// StateDir defaults to a directory outside the worktree.
	})
	if err != nil {
		log.Fatal(err) // a bad worktree, state directory or config
	}
	defer s.Close()

	// One server's trouble does not fail Connect: it is a notice.
	for _, n := range s.Notices() {
		fmt.Println("notice:", n)
	}
	// Offer the model these (denied tools are left out); see packages
	// openai and anthropic for the providers' JSON.
	for _, t := range s.Tools() {
		fmt.Println(t.Name, t.Decision, t.Strict)
	}
}

func ExampleSession_Call() {
	var s *mcphost.Session // from Connect

	// The model called mcp__notes__list_notes with these arguments.
	res, err := s.Call(context.Background(), "mcp__notes__list_notes", json.RawMessage(`{"query":"milk"}`))
	switch {
	case errors.Is(err, mcphost.ErrDenied), errors.Is(err, mcphost.ErrDeclined), errors.Is(err, mcphost.ErrBadArguments):
		// The server was not contacted. Tell the model why, so that it
		// can correct itself (openai.ChatToolError, anthropic.ToolError).
		fmt.Println("to the model:", err)
	case errors.Is(err, mcphost.ErrServerGone):
		// The server died; Session.Restart may bring it back.
		fmt.Println("server gone:", err)
	case err != nil:
		fmt.Println("call failed:", err)
	default:
		// res.IsError means the tool ran and reported failure: the model
		// should see it like any other result.
		fmt.Println(len(res.Content), res.IsError)
	}
}

func ExampleApprover() {
	in := bufio.NewReader(os.Stdin)
	// askPerson asks on the terminal before each call of a tool that needs
	// approval. Only an explicit "y" approves.
	askPerson := func(ctx context.Context, req mcphost.ApprovalRequest) (bool, error) {
		fmt.Printf("the model wants to run %s\n  because: %s\n  arguments: %s\n",
			req.Tool.Name, req.Reason, req.Arguments)
		for _, c := range req.Changes { // it changed since a person reviewed it
			fmt.Printf("  changed: %s\n", c.Field)
		}
		fmt.Print("allow? [y/N] ")
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return false, nil // no answer is no
		}
		return strings.TrimSpace(line) == "y", nil
	}

	opts := mcphost.Options{Approver: askPerson}
	_ = opts // pass to Connect
}

func ExampleOptions() {
	opts := mcphost.Options{
		// Lifecycle, notices and calls (never argument values).
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		// A journal of every call: tool, decision, duration, outcome.
		OnCall: func(r mcphost.CallRecord) {
			fmt.Printf("%s %s %v err=%v isError=%v\n", r.Tool, r.Decision, r.Duration, r.Err, r.IsError)
		},
		// A server's tools changed mid-session: offer s.Tools() again
		// before the model's next turn.
		OnToolsChanged: func(server string) {
			fmt.Println("tools of", server, "changed")
		},
	}
	_ = opts // pass to Connect
}
