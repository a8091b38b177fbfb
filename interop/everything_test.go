package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
)

// Environment variables of the env tests: a host variable the config does
// not pass, one it passes (env_pass), one it sets (env), and their values.
const (
	secretName  = "MCPHOST_TEST_SECRET"
	secretValue = "s3cret-value-that-must-not-leak"
	passedName  = "MCPHOST_TEST_PASSED"
	passedValue = "passed-on-purpose"
	literalName = "MCPHOST_TEST_LITERAL"
	literalVal  = "set-by-config"
)

// everythingServer is the config of @modelcontextprotocol/server-everything.
func everythingServer(t testing.TB) mcphost.ServerConfig {
	cfg := nodeServer(t, "everything", "server-everything")
	cfg.Allow = []string{"echo", "get-sum", "get-env", "get-roots-list", "get-structured-content",
		"get-tiny-image", "gzip-file-as-resource", "trigger-long-running-operation", "toggle-simulated-logging", "simulate-research-query"}
	return cfg
}

// TestEverything runs the everything reference server through mcphost and
// calls its tools end to end, in one session.
func TestEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := everythingServer(t)
	mark(t, &cfg)
	cfg.Env[literalName] = literalVal
	cfg.EnvPass = []string{passedName}
	opts := h.opts()
	opts.HostEnv = append(os.Environ(),
		secretName+"="+secretValue,
		passedName+"="+passedValue,
		// What an agent's environment typically holds and a server must
		// not see.
		"GITHUB_TOKEN="+secretValue,
		"AWS_SECRET_ACCESS_KEY="+secretValue,
	)
	s := h.connect(opts, cfg)

	t.Run("get-sum", func(t *testing.T) {
		for _, tc := range []struct {
			args, want string
		}{
			{`{"a":2,"b":3}`, "The sum of 2 and 3 is 5."},
			{`{"a":-1.5,"b":0.25}`, "The sum of -1.5 and 0.25 is -1.25."},
			{`{"a":1e3,"b":0}`, "The sum of 1000 and 0 is 1000."},
		} {
			if got := call(t, s, "mcp__everything__get-sum", tc.args); got != tc.want {
				t.Errorf("get-sum %s = %q, want %q", tc.args, got, tc.want)
			}
		}
	})

	t.Run("echo", func(t *testing.T) {
		for _, msg := range []string{"hello", "", "naïve ünïcödé ✓ 日本語", `quotes " and \ and {"json": true}`, "two\nlines\ttab"} {
			args, _ := json.Marshal(map[string]string{"message": msg})
			if got, want := call(t, s, "mcp__everything__echo", string(args)), "Echo: "+msg; got != want {
				t.Errorf("echo %q = %q, want %q", msg, got, want)
			}
		}
	})

	t.Run("get-env", func(t *testing.T) {
		out := call(t, s, "mcp__everything__get-env", `{}`)
		if strings.Contains(out, secretValue) {
			t.Errorf("a host secret reached the server; its environment:\n%s", out)
		}
		var env map[string]string
		if err := json.Unmarshal([]byte(out), &env); err != nil {
			t.Fatalf("get-env did not return a JSON object: %v\n%s", err, out)
		}
		for _, name := range []string{secretName, "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
			if _, ok := env[name]; ok {
				t.Errorf("host variable %s reached the server", name)
			}
		}
		if env[passedName] != passedValue {
			t.Errorf("env_pass %s = %q in the server, want %q", passedName, env[passedName], passedValue)
		}
		if env[literalName] != literalVal {
			t.Errorf("env %s = %q in the server, want %q", literalName, env[literalName], literalVal)
		}
		// Only the allowlist of DESIGN.md, the private temporary
		// directory and what the config names may be there.
		allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "LC_ALL": true, "TERM": true,
			"TZ": true, "USER": true, "LOGNAME": true, "SHELL": true, "TMPDIR": true, "TMP": true, "TEMP": true,
			passedName: true, literalName: true, runMarker: true}
		for name := range env {
			if !allowed[name] {
				t.Errorf("variable %s reached the server; only the allowlist, env and env_pass should", name)
			}
		}
		tmp := env["TMPDIR"]
		if tmp == "" || tmp == os.TempDir() || tmp == "/tmp" {
			t.Errorf("TMPDIR in the server is %q; want a private temporary directory", tmp)
		}
		for _, name := range []string{"TMP", "TEMP"} {
			if v, ok := env[name]; ok && v != tmp {
				t.Errorf("%s in the server is %q, TMPDIR %q: a server would put temporary files where Close does not remove them", name, v, tmp)
			}
		}
	})

	t.Run("roots", func(t *testing.T) {
		// mcphost offers the worktree, and only it, as the client's root.
		out := call(t, s, "mcp__everything__get-roots-list", `{}`)
		uri := (&url.URL{Scheme: "file", Path: h.worktree}).String()
		if !strings.Contains(out, "(1 total)") || !strings.Contains(out, "URI: "+uri) {
			t.Errorf("get-roots-list = %q; want exactly the worktree %s", out, uri)
		}
	})

	t.Run("content kinds", func(t *testing.T) {
		ctx := context.Background()
		res, err := s.Call(ctx, "mcp__everything__get-structured-content", json.RawMessage(`{"location":"Chicago"}`))
		if err != nil || res.IsError {
			t.Fatalf("get-structured-content: %v %v", err, res)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if !strings.Contains(string(sc), "temperature") {
			t.Errorf("get-structured-content: structuredContent = %s; want the weather object", sc)
		}
		res, err = s.Call(ctx, "mcp__everything__get-tiny-image", nil)
		if err != nil || res.IsError {
			t.Fatalf("get-tiny-image: %v %v", err, res)
		}
		images := 0
		for _, c := range res.Content {
			if img, ok := c.(*mcp.ImageContent); ok && img.MIMEType == "image/png" && len(img.Data) > 0 {
				images++
			}
		}
		if images != 1 {
			t.Errorf("get-tiny-image returned %d PNG images, want 1 (content: %d items)", images, len(res.Content))
		}
	})

	t.Run("network", func(t *testing.T) {
		// gzip-file-as-resource fetches its input from a URL. A data: URL
		// needs no network and works; an http: URL on the host's
		// loopback never reaches the host: the sandbox gives the server
		// no network at all (network = false, the default), and the
		// server reports the failed fetch.
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			io.WriteString(w, "from the host")
		}))
		defer srv.Close()
		call(t, s, "mcp__everything__gzip-file-as-resource",
			`{"name":"hello.gz","data":"data:text/plain;base64,aGVsbG8=","outputType":"resource"}`)
		args, _ := json.Marshal(map[string]string{"name": "host.gz", "data": srv.URL + "/file.txt", "outputType": "resource"})
		out := callErr(t, s, "mcp__everything__gzip-file-as-resource", string(args))
		t.Logf("fetching %s: %s", srv.URL, out)
		if n := hits.Load(); n != 0 {
			t.Errorf("the server reached the host's loopback %d times; want no network", n)
		}
	})

	t.Run("task-only tool", func(t *testing.T) {
		// simulate-research-query can only be called as a task
		// (execution.taskSupport "required"): mcphost offers it and
		// calls it as one, to its result.
		if _, ok := s.Tool("mcp__everything__simulate-research-query"); !ok {
			t.Fatalf("the task-only tool is not offered; notices %q", s.Notices())
		}
		out := call(t, s, "mcp__everything__simulate-research-query", `{"topic":"tide pools"}`)
		if !strings.Contains(out, "# Research Report: tide pools") {
			t.Errorf("simulate-research-query = %q", out)
		}
	})

	t.Run("notifications", func(t *testing.T) {
		// The server registers some tools only after initialize and says
		// so with notifications/tools/list_changed: they must be there.
		for _, name := range []string{"get-roots-list"} {
			if _, ok := s.Tool("mcp__everything__" + name); !ok {
				t.Errorf("%s, announced by list_changed at start, is missing", name)
			}
		}
		// It logs "Roots updated" once it has the roots, soon after
		// initialize.
		logs := func() int { return h.log.count("server log", "server", "everything") }
		waitFor(t, "the server's log message about its roots", func() bool { return logs() >= 1 })
		before := logs()

		// Three kinds of traffic at once: a long-running operation
		// (no OnProgress here, so no progress token), 80
		// short calls, and log messages: each time simulated logging is
		// turned on, the server sends one right away. Every call must
		// get its own answer, and every log message must arrive.
		ctx := context.Background()
		longDone := make(chan string, 1)
		go func() {
			res, err := s.Call(ctx, "mcp__everything__trigger-long-running-operation", json.RawMessage(`{"duration":2,"steps":4}`))
			if err != nil {
				longDone <- "error: " + err.Error()
				return
			}
			longDone <- text(res)
		}()
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		const toggles = 10 // on, off, ...: ends off, after 5 log messages
		wg.Go(func() {
			for i := range toggles {
				res, err := s.Call(ctx, "mcp__everything__toggle-simulated-logging", nil)
				want := "Started"
				if i%2 == 1 {
					want = "Stopped"
				}
				switch {
				case err != nil:
					errs <- fmt.Errorf("toggle-simulated-logging #%d: %w", i+1, err)
				case !strings.HasPrefix(text(res), want):
					errs <- fmt.Errorf("toggle-simulated-logging #%d = %q, want %s...", i+1, text(res), want)
				}
			}
		})
		for g := range 8 {
			wg.Go(func() {
				for i := range 10 {
					var tool, args, want string
					if i%2 == 0 {
						tool, want = "mcp__everything__echo", fmt.Sprintf("Echo: g%d-i%d", g, i)
						args = fmt.Sprintf(`{"message":"g%d-i%d"}`, g, i)
					} else {
						tool, want = "mcp__everything__get-sum", fmt.Sprintf("The sum of %d and %d is %d.", g, i, g+i)
						args = fmt.Sprintf(`{"a":%d,"b":%d}`, g, i)
					}
					res, err := s.Call(ctx, tool, json.RawMessage(args))
					switch {
					case err != nil:
						errs <- fmt.Errorf("%s %s: %w", tool, args, err)
					case text(res) != want:
						errs <- fmt.Errorf("%s %s = %q, want %q", tool, args, text(res), want)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if got, want := <-longDone, "Long running operation completed. Duration: 2 seconds, Steps: 4."; got != want {
			t.Errorf("trigger-long-running-operation = %q, want %q", got, want)
		}
		waitFor(t, fmt.Sprintf("%d simulated log messages", toggles/2), func() bool { return logs() >= before+toggles/2 })
	})
}
