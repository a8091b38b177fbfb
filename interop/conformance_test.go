package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost/mcphost/mcphost"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned by testdata/conformance/package-lock.json and installed by `make
// deps`) runs its client scenarios against mcphost. For each scenario the
// suite starts a scenario server on a Streamable HTTP URL and runs a client
// command with that URL; the command here is this test binary again
// (TestConformanceRole, role "client"), which connects an mcphost session
// to one server: this test binary a third time (role "adapter"), a stdio
// server that forwards each JSON-RPC line to the URL and every message that
// comes back to its stdout. mcphost speaks stdio only, so the adapter, not
// mcphost, is what speaks HTTP: scenarios about the HTTP transport or OAuth
// are not applicable, and checks of a scenario about HTTP headers the
// adapter sets are not counted.

// conformanceScenarios is every client scenario of the pinned suite, and
// what each must do. TestConformance fails when the suite lists a scenario
// this table does not name, or this table names one the suite lacks.
var conformanceScenarios = []conformanceScenario{
	{name: "initialize", want: pass, versions: []string{"2025-11-25"}},
	{name: "tools_call", want: pass, versions: []string{"2025-11-25", "2026-07-28"}},
	{name: "elicitation-sep1034-client-defaults", want: pass, versions: []string{"2025-11-25"}},
	{name: "request-metadata", want: pass, versions: []string{"2026-07-28"},
		// The adapter sets the MCP-Protocol-Version header from the
		// message's _meta; these checks test it, not mcphost.
		adapterChecks: []string{"sep-2575-http-client-sends-version-header", "sep-2575-http-version-header-matches-meta"}},
	{name: "sep-2322-client-request-state", want: pass, versions: []string{"2026-07-28"}},
	// The client echoes the input schema of the tool's definition as
	// mcphost gives it to the agent (Tool.Definition, as listed); the
	// schema offered to the model (Tool.Schema) is a closed or strict
	// form by design, not what this scenario is about.
	{name: "json-schema-2020-12-preservation", want: pass, versions: []string{"2025-11-25", "2026-07-28"}},
	{name: "json-schema-ref-no-deref", want: pass, versions: []string{"2026-07-28"}},

	{name: "sse-retry", want: notApplicable, why: "Streamable HTTP transport (SSE reconnection with retry and Last-Event-ID): mcphost speaks stdio only"},
	{name: "http-standard-headers", want: notApplicable, why: "Streamable HTTP transport (standard request headers): mcphost speaks stdio only"},
	{name: "http-custom-headers", want: notApplicable, why: "Streamable HTTP transport (custom headers from tool parameters): mcphost speaks stdio only"},
	{name: "http-invalid-tool-headers", want: notApplicable, why: "Streamable HTTP transport (tools whose header mappings are invalid): mcphost speaks stdio only"},
	{name: "sep-2640-client-no-prefetch", want: notApplicable, why: "skills extension (SEP-2640, io.modelcontextprotocol/skills): mcphost does not implement the extension"},
	{name: "sep-2640-client-verify-digest", want: notApplicable, why: "skills extension (SEP-2640): mcphost does not implement the extension"},
	{name: "sep-2640-client-verify-size", want: notApplicable, why: "skills extension (SEP-2640): mcphost does not implement the extension"},
	{name: "sep-2640-client-verify-frontmatter", want: notApplicable, why: "skills extension (SEP-2640): mcphost does not implement the extension"},
	// Every auth/ scenario: matched by prefix, see conformanceEntry.
	{name: "auth/", want: notApplicable, why: "OAuth authorization of an HTTP server: stdio servers are not authorized (the spec's authorization applies to HTTP transports only)"},
}

type conformanceWant int

const (
	pass conformanceWant = iota
	// expectedFail: the scenario fails because of mcphost, for the
	// reason in why; the test fails when it passes, so that the entry is
	// removed.
	expectedFail
	notApplicable
)

type conformanceScenario struct {
	name string
	want conformanceWant
	why  string
	// versions are the protocol revisions to run the scenario at
	// (--spec-version), each on its own wire: 2025-11-25 stateful
	// (initialize), 2026-07-28 stateless (server/discover, per-request
	// _meta). mcphost asks for neither: it tries server/discover and
	// falls back to initialize.
	versions []string
	// adapterChecks are check ids of the scenario that test the adapter
	// (what it sends over HTTP), not mcphost: reported, not counted.
	adapterChecks []string
}

// conformanceEntry returns the table's entry for a scenario the suite
// lists; an entry whose name ends in "/" covers every scenario under it.
func conformanceEntry(name string) (conformanceScenario, bool) {
	for _, sc := range conformanceScenarios {
		if sc.name == name || strings.HasSuffix(sc.name, "/") && strings.HasPrefix(name, sc.name) {
			return sc, true
		}
	}
	return conformanceScenario{}, false
}

const (
	// conformanceRole selects what TestConformanceRole does in a process
	// started by the suite ("client") or by mcphost ("adapter").
	conformanceRole = "MCPHOST_CONFORMANCE_ROLE"
	// conformanceURL is the scenario server's URL, for the adapter.
	conformanceURL = "MCPHOST_CONFORMANCE_URL"
	// conformanceServer is the adapter's server name in the session.
	conformanceServer = "conformance"
	// scenarioTimeout bounds one scenario: the suite's run of the client
	// (its --timeout) is shorter, so that its own report comes first.
	scenarioTimeout = 60 * time.Second
	// conformanceTimeout bounds the whole of TestConformance.
	conformanceTimeout = 3 * time.Minute
)

// TestConformance runs the suite's client scenarios against mcphost and
// checks the outcome of each against conformanceScenarios.
func TestConformance(t *testing.T) {
	t.Parallel()
	node := nodePath(t)
	pkg := repoPath(t, "testdata", "conformance")
	suite := filepath.Join(pkg, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: the MCP conformance suite is not installed (%v): run `make deps` (npm ci in testdata/conformance) first", err))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t\n'\"\\$`;&|<>()*?[]#~") {
		// The suite runs the client command through a shell, split at
		// spaces.
		skipOrFail(t, fmt.Sprintf("SKIP: the test binary's path %q has characters the suite's shell command would split or expand (set GOTMPDIR to a plain path)", exe))
	}
	nodeArgs := []string{suite}
	switch major, err := nodeMajor(node); {
	case err != nil:
		t.Fatalf("node's version: %v", err)
	case major < 20:
		skipOrFail(t, fmt.Sprintf("SKIP: node %d is too old for the MCP conformance suite (Node.js 20.6 or newer)", major))
	case major < 22:
		// The suite imports fs.globSync (Node.js 22): see node20.mjs.
		nodeArgs = []string{"--import", filepath.Join(pkg, "node20.mjs"), suite}
	}
	suiteCmd := func(ctx context.Context, dir string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, node, append(slices.Clone(nodeArgs), args...)...)
		cmd.Dir = dir
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}
	// Every scenario ends by this deadline (the subtests run after this
	// function returns: the cleanup cancels it after them).
	all, cancelAll := context.WithTimeout(context.Background(), conformanceTimeout)
	t.Cleanup(cancelAll)

	// The exact set: every client scenario the suite has is in the table.
	ctx, cancel := context.WithTimeout(all, 30*time.Second)
	defer cancel()
	out, err := suiteCmd(ctx, t.TempDir(), "list", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --client: %v\n%s", err, out)
	}
	var listed []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			name, _, _ = strings.Cut(name, " ")
			listed = append(listed, name)
		}
	}
	if len(listed) == 0 {
		t.Fatalf("conformance list --client listed no scenario:\n%s", out)
	}
	covered := map[string]bool{}
	for _, name := range listed {
		sc, ok := conformanceEntry(name)
		if !ok {
			t.Errorf("the suite has client scenario %q, which conformanceScenarios does not name: say whether mcphost must pass it", name)
			continue
		}
		covered[sc.name] = true
		if sc.want == notApplicable {
			t.Logf("not applicable: %s: %s", name, sc.why)
		}
	}
	for _, sc := range conformanceScenarios {
		if !covered[sc.name] {
			t.Errorf("conformanceScenarios names %q, which the suite does not list", sc.name)
		}
	}

	for _, sc := range conformanceScenarios {
		if sc.want == notApplicable || !covered[sc.name] {
			continue
		}
		for _, version := range sc.versions {
			runConformanceScenario(t, all, suiteCmd, exe, sc, version)
		}
	}
}

// runConformanceScenario runs one client scenario of the suite at one
// protocol revision, with this test binary as the client, and checks its
// outcome.
func runConformanceScenario(t *testing.T, all context.Context, suiteCmd func(context.Context, string, ...string) *exec.Cmd, exe string, sc conformanceScenario, version string) {
	t.Run(sc.name+"@"+version, func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(all, scenarioTimeout)
		defer cancel()
		results := t.TempDir()
		cmd := suiteCmd(ctx, results, "client",
			"--command", exe+" -test.run=TestConformanceRole",
			"--scenario", sc.name,
			"--spec-version", version,
			"--timeout", strconv.Itoa(int((scenarioTimeout - 15*time.Second).Milliseconds())),
			"-o", results)
		cmd.Env = append(os.Environ(), conformanceRole+"=client")
		start := time.Now()
		out, runErr := cmd.CombinedOutput()
		checks, err := readChecks(results)
		if err != nil {
			t.Fatalf("%v (suite: %v)\n%s", err, runErr, out)
		}
		var failed, warned, verdicts []string
		adapterFailed := 0
		for _, c := range checks {
			line := c.ID + ": " + c.Status
			if c.ErrorMessage != "" {
				line += ": " + c.ErrorMessage
			}
			if c.Status != "INFO" {
				verdicts = append(verdicts, c.ID+" "+c.Status)
			}
			switch {
			case slices.Contains(sc.adapterChecks, c.ID):
				t.Logf("adapter check (not counted) %s", line)
				if c.Status == "FAILURE" {
					adapterFailed++
				}
			case c.Status == "FAILURE":
				failed = append(failed, line)
			case c.Status == "WARNING":
				warned = append(warned, line)
			}
		}
		for _, w := range warned {
			t.Logf("warning: %s", w)
		}
		stderr := clientStderr(results)
		negotiated := "none"
		if _, after, ok := strings.Cut(stderr, "negotiated protocol "); ok {
			negotiated, _, _ = strings.Cut(after, "\n")
		}
		t.Logf("%s at %s (mcphost negotiated %s): %d checks, %d failed, in %v\n%s", sc.name, version, negotiated,
			len(checks), len(failed), time.Since(start).Round(time.Millisecond), strings.Join(verdicts, "\n"))
		switch sc.want {
		case pass:
			if len(failed) > 0 || len(checks) == 0 {
				t.Errorf("scenario %s failed:\n%s\nsuite (%v):\n%s\nclient stderr:\n%s",
					sc.name, strings.Join(failed, "\n"), runErr, out, stderr)
			} else if runErr != nil && adapterFailed == 0 {
				// No check failed, yet the suite says it did not pass:
				// a check it could not record is not a pass.
				t.Errorf("scenario %s: the suite exited with %v and no failed check\nsuite:\n%s\nclient stderr:\n%s",
					sc.name, runErr, out, stderr)
			}
		case expectedFail:
			if len(failed) == 0 {
				t.Errorf("scenario %s is marked expected-fail (%s) but passes: remove the mark", sc.name, sc.why)
			} else {
				t.Logf("expected failure (%s):\n%s", sc.why, strings.Join(failed, "\n"))
			}
		}
	})
}

// conformanceCheck is one check of the suite's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads the checks.json the suite wrote under dir (in a
// directory named after the scenario and the time).
func readChecks(dir string) ([]conformanceCheck, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) != 1 {
		return nil, fmt.Errorf("want one checks.json under %s, found %d", dir, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return nil, err
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		return nil, fmt.Errorf("%s: %w", files[0], err)
	}
	return checks, nil
}

// clientStderr is what the client wrote to stderr, as the suite kept it.
func clientStderr(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "stderr.txt"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

// nodeMajor returns node's major version.
func nodeMajor(node string) (int, error) {
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		return 0, err
	}
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	return strconv.Atoi(major)
}

// TestConformanceRole is not a test: it is what this binary does when
// TestConformance's suite or mcphost runs it with conformanceRole set, and
// it exits the process itself (so that the testing package prints nothing
// on the adapter's stdout). Without the variable it does nothing.
func TestConformanceRole(t *testing.T) {
	var err error
	switch role := os.Getenv(conformanceRole); role {
	case "":
		return
	case "client":
		scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
		if flag.NArg() < 1 {
			err = errors.New("no server URL among the arguments")
		} else {
			err = conformanceClient(scenario, flag.Arg(flag.NArg()-1))
		}
	case "adapter":
		err = conformanceAdapter(os.Getenv(conformanceURL), os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	os.RemoveAll(buildDir) // TestMain's, which does not run its cleanup now
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance %s: %v\n", os.Getenv(conformanceRole), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// conformanceClient is the client under test: an mcphost session with one
// server, the adapter to url, doing what the scenario asks of a client.
func conformanceClient(scenario, url string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	worktree, err := os.MkdirTemp("", "mcphost-conformance-worktree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(worktree)
	state, err := os.MkdirTemp("", "mcphost-conformance-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cfg := mcphost.ServerConfig{
		Name:    conformanceServer,
		Command: []string{exe, "-test.run=TestConformanceRole"},
		Env:     map[string]string{conformanceRole: "adapter", conformanceURL: url},
		// The adapter needs the host's loopback, and it is not what is
		// under test: the sandbox is tested elsewhere.
		Unconfined:     true,
		StartupTimeout: 30 * time.Second,
		CallTimeout:    30 * time.Second,
	}
	opts := mcphost.Options{
		Worktree:   worktree,
		StateDir:   state,
		CloseGrace: 500 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// A person who approves every call.
		Approver: func(context.Context, mcphost.ApprovalRequest) (mcphost.Verdict, error) {
			return mcphost.ApproveOnce, nil
		},
		// A person who accepts the form as mcphost pre-fills it: each
		// field with the schema's default, where it has one.
		Elicit: func(_ context.Context, req mcphost.ElicitRequest) (mcphost.ElicitAnswer, error) {
			content := map[string]any{}
			for _, f := range req.Fields {
				if f.Default != nil {
					content[f.Name] = f.Default
				}
			}
			return mcphost.ElicitAnswer{Action: mcphost.ElicitAccept, Content: content}, nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	s, err := mcphost.Connect(ctx, []mcphost.ServerConfig{cfg}, opts)
	if err != nil {
		return fmt.Errorf("Connect: %w", err)
	}
	defer s.Close()
	for _, info := range s.Servers() {
		if info.State != mcphost.ServerRunning {
			return fmt.Errorf("server %s is %s (%s); notices:\n%s", info.Name, info.State, info.Error, strings.Join(s.Notices(), "\n"))
		}
		fmt.Fprintf(os.Stderr, "negotiated protocol %s\n", info.Protocol)
	}
	callTool := func(tool, args string) error {
		res, err := s.Call(ctx, "mcp__"+conformanceServer+"__"+tool, json.RawMessage(args))
		if err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		if res.IsError {
			return fmt.Errorf("call %s: the tool reported an error: %s", tool, text(res))
		}
		fmt.Fprintf(os.Stderr, "call %s: %s\n", tool, text(res))
		return nil
	}
	switch scenario {
	case "initialize", "request-metadata", "json-schema-ref-no-deref":
		// Connect initialized and listed the tools: that is all.
	case "tools_call":
		return callTool("add_numbers", `{"a":2,"b":3}`)
	case "elicitation-sep1034-client-defaults":
		return callTool("test_client_elicitation_defaults", `{}`)
	case "sep-2322-client-request-state":
		// The unrelated call runs while the first call's rounds do.
		errs := make(chan error, 2)
		go func() { errs <- callTool("test_mrtr_echo_state", `{}`) }()
		go func() { errs <- callTool("test_mrtr_unrelated", `{}`) }()
		err := errors.Join(<-errs, <-errs)
		return errors.Join(err, callTool("test_mrtr_no_state", `{}`), callTool("test_mrtr_no_result_type", `{}`))
	case "json-schema-2020-12-preservation":
		// The input schema as mcphost gives it to the agent, in the
		// tool's definition exactly as listed.
		tool, ok := s.Tool("mcp__" + conformanceServer + "__json_schema_2020_12_tool")
		if !ok {
			return errors.New("no tool json_schema_2020_12_tool")
		}
		var def struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(tool.Definition, &def); err != nil {
			return err
		}
		return callTool("json_schema_echo", `{"schema":`+string(def.InputSchema)+`}`)
	default:
		return fmt.Errorf("scenario %q: the client does not know what to do", scenario)
	}
	return nil
}

// conformanceAdapter is a stdio MCP server that forwards every JSON-RPC
// message it reads, one per line, to url in an HTTP POST (Streamable HTTP)
// and writes every message of each answer (a JSON body or the events of
// an SSE stream) as a line. Requests are posted concurrently (a call may
// wait for the answer to a question it asked on its stream); notifications
// and responses in order. It keeps the session id the server gives and
// sends MCP-Protocol-Version: the message's _meta version, else the one
// initialize negotiated.
func conformanceAdapter(url string, stdin io.Reader, stdout io.Writer) error {
	if url == "" {
		return errors.New("no URL")
	}
	var (
		outMu    sync.Mutex
		mu       sync.Mutex
		session  string
		version  string
		inflight sync.WaitGroup
	)
	write := func(msg []byte) {
		msg = bytes.TrimSpace(msg)
		if len(msg) == 0 {
			return
		}
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = stdout.Write(append(msg, '\n'))
	}
	post := func(line []byte, id json.RawMessage, method, metaVersion string) {
		fail := func(err error) {
			fmt.Fprintf(os.Stderr, "adapter: %s: %v\n", method, err)
			if id != nil {
				e, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
					"error": map[string]any{"code": -32603, "message": "adapter: " + err.Error()}})
				write(e)
			}
		}
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(line))
		if err != nil {
			fail(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mu.Lock()
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		v := version
		mu.Unlock()
		if metaVersion != "" {
			v = metaVersion
		}
		if v != "" {
			req.Header.Set("MCP-Protocol-Version", v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fail(err)
			return
		}
		defer resp.Body.Close()
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			session = sid
			mu.Unlock()
		}
		// Learn the version initialize negotiated from its answer.
		deliver := func(msg []byte) {
			if method == "initialize" {
				var r struct {
					Result struct {
						ProtocolVersion string `json:"protocolVersion"`
					} `json:"result"`
				}
				if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
					mu.Lock()
					version = r.Result.ProtocolVersion
					mu.Unlock()
				}
			}
			write(msg)
		}
		ct := resp.Header.Get("Content-Type")
		switch {
		case strings.HasPrefix(ct, "text/event-stream"):
			readSSE(resp.Body, deliver)
		default:
			body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
			if err != nil {
				fail(err)
				return
			}
			body = bytes.TrimSpace(body)
			var rpc map[string]json.RawMessage
			isRPC := len(body) > 0 && json.Unmarshal(body, &rpc) == nil && rpc["jsonrpc"] != nil
			switch {
			case isRPC && resp.StatusCode/100 != 2 && id != nil && (rpc["id"] == nil || string(rpc["id"]) == "null"):
				// The server refused the request at the HTTP level
				// (a missing session, a version it does not serve),
				// answering no request: the answer is to this one,
				// as an HTTP client transport would make it.
				rpc["id"] = id
				body, _ = json.Marshal(rpc)
				deliver(body)
			case isRPC && id == nil && (rpc["id"] == nil || string(rpc["id"]) == "null"):
				// A refused notification or response: nobody waits
				// for an answer.
				fmt.Fprintf(os.Stderr, "adapter: %s: HTTP %s: %s\n", method, resp.Status, body)
			case isRPC || len(body) > 0 && json.Valid(body) && body[0] == '[':
				deliver(body)
			case resp.StatusCode/100 != 2:
				fail(fmt.Errorf("HTTP %s: %.200s", resp.Status, body))
			}
		}
	}
	// listen opens the stream on which the server sends what is not the
	// answer to a POST, and returns once the server has taken it (its
	// answer's headers), reading the events in the background. It must
	// not return sooner: a server drops what it would send on a stream
	// not yet open (the TypeScript SDK's does), so a call posted first
	// could wait for a question that never comes.
	listen := func(sid, v string) {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			cancel()
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if v != "" {
			req.Header.Set("MCP-Protocol-Version", v)
		}
		// Only the wait for the headers is bounded: the stream stays
		// open for the session's life.
		bound := time.AfterFunc(10*time.Second, cancel)
		resp, err := http.DefaultClient.Do(req)
		bound.Stop()
		if err != nil {
			cancel()
			fmt.Fprintf(os.Stderr, "adapter: GET stream: %v\n", err)
			return
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			resp.Body.Close()
			cancel()
			fmt.Fprintf(os.Stderr, "adapter: GET stream: HTTP %s (the server offers none)\n", resp.Status)
			return
		}
		go func() {
			defer cancel()
			defer resp.Body.Close()
			readSSE(resp.Body, write)
		}()
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.Clone(bytes.TrimSpace(sc.Bytes()))
		if len(line) == 0 {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(line, &msg)
		metaVersion, _ := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		if msg.Method != "" && msg.ID != nil {
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				post(line, msg.ID, msg.Method, metaVersion)
			}()
			continue
		}
		post(line, nil, msg.Method, metaVersion)
		if msg.Method == "notifications/initialized" {
			// A stateful session: open the stream on which the
			// server sends what is not the answer to a POST (a
			// question asked outside the call's stream).
			mu.Lock()
			sid, v := session, version
			mu.Unlock()
			if sid != "" {
				listen(sid, v)
			}
		}
	}
	inflight.Wait()
	return sc.Err()
}

// readSSE calls deliver with the data of each event of an SSE stream.
func readSSE(r io.Reader, deliver func([]byte)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data []byte
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			deliver(data)
			data = nil
		case strings.HasPrefix(l, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(l, "data:"), " ")...)
		}
	}
	deliver(data)
}
