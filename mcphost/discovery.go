package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/sandbox"
	"github.com/mcphost/mcphost/schema"
)

// Discovery bounds: a server that keeps paginating or lists absurdly many
// tools is cut off, not followed forever.
const (
	maxPages = 1000
	maxTools = 20000
)

// listAll reads every page of tools/list and returns the raw definitions.
func (srv *server) listAll(ctx context.Context, cs *mcp.ClientSession, tap *listTap) ([]json.RawMessage, error) {
	return srv.listPaged("tools/list", "tools", maxTools, tap, func(cursor string) error {
		_, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		return err
	})
}

// listPaged reads every page of the paginated list method (tools/list,
// prompts/list), whose result holds its items in the array field, and
// returns the items as the server sent them (a tap on the connection sees
// each result's bytes). call sends one page's request with its cursor. It
// stops at maxPages pages, at limit items and at a cursor seen before.
func (srv *server) listPaged(method, field string, limit int, tap *listTap, call func(cursor string) error) ([]json.RawMessage, error) {
	srv.listMu.Lock()
	defer srv.listMu.Unlock()
	var (
		all     []json.RawMessage
		cursor  string
		cursors = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("more than %d pages of %s; stopped reading", maxPages, field)
		}
		tap.take()
		if err := call(cursor); err != nil {
			return nil, fromServer(err)
		}
		raw := tap.take()
		if raw == nil {
			return nil, fmt.Errorf("%s result not seen on the wire", method)
		}
		var res map[string]json.RawMessage
		var items []json.RawMessage
		var next *string
		err := json.Unmarshal(raw, &res)
		if err == nil && res[field] != nil {
			err = json.Unmarshal(res[field], &items)
		}
		if err == nil && res["nextCursor"] != nil {
			err = json.Unmarshal(res["nextCursor"], &next)
		}
		if err != nil {
			return nil, fmt.Errorf("%s result is not valid: %w", method, err)
		}
		all = append(all, items...)
		if len(all) > limit {
			return nil, fmt.Errorf("more than %d %s; stopped reading", limit, field)
		}
		if next == nil || *next == "" {
			return all, nil
		}
		cursor = *next
		if cursors[cursor] {
			return nil, fmt.Errorf("%s repeated cursor %q: the server paginates in a loop", method, printable(cursor, 40))
		}
		cursors[cursor] = true
	}
}

// toolsChanged handles notifications/tools/list_changed: it marks the server
// as re-listing at once, so calls wait for the new definitions instead of
// going through under the old decision, and re-lists in the background
// (again, if more notifications came meanwhile, at most once per
// relistInterval).
func (srv *server) toolsChanged(gen uint64) {
	s := srv.sess
	srv.mu.Lock()
	if srv.gen != gen || srv.stopErr != nil {
		srv.mu.Unlock()
		return
	}
	if srv.state != ServerRunning || srv.relisting != nil {
		srv.dirty = true
		srv.mu.Unlock()
		return
	}
	done := make(chan struct{})
	srv.relisting = done
	cs, tap := srv.cs, srv.tap
	srv.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for {
			srv.mu.Lock()
			wait := relistInterval - time.Since(srv.lastRelist)
			srv.mu.Unlock()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-done: // closed by close: the server is going
				}
				t.Stop()
			}
			srv.mu.Lock()
			srv.lastRelist = time.Now()
			srv.mu.Unlock()
			ok := srv.relist(gen, cs, tap)
			srv.mu.Lock()
			again := ok && srv.dirty && srv.relisting == done
			srv.dirty = false
			if again {
				srv.relists++
			} else {
				srv.relists = 0
			}
			unsettled := srv.relists >= maxRelistRounds
			if !again || unsettled {
				var proc *sandbox.Process
				var why error
				if unsettled {
					// Stopped before the waiting calls are released:
					// they see the stop, not a list that is already
					// stale.
					why = fmt.Errorf("its tools did not settle: it sent notifications/tools/list_changed during each of %d re-lists in a row", maxRelistRounds)
					proc = srv.stopLocked(why)
				}
				// Publish before releasing waiting calls, so that none
				// of them goes through under the old definitions.
				if srv.relisting == done {
					srv.relisting = nil
					close(done)
				}
				srv.mu.Unlock()
				if unsettled {
					srv.halted(proc, why)
					return
				}
				break
			}
			srv.mu.Unlock()
		}
		if s.opts.OnToolsChanged != nil && !s.isClosed() {
			s.opts.OnToolsChanged(srv.cfg.Name)
		}
	}()
}

// relist re-reads a running server's tools and publishes them. It reports
// whether the server is still the one it was asked about.
func (srv *server) relist(gen uint64, cs *mcp.ClientSession, tap *listTap) bool {
	s := srv.sess
	ctx, cancel := context.WithTimeout(context.Background(), srv.cfg.StartupTimeout)
	defer cancel()
	raws, err := srv.listAll(ctx, cs, tap)
	srv.mu.Lock()
	stale := srv.gen != gen
	srv.mu.Unlock()
	if stale {
		return false
	}
	if err != nil {
		// Fail closed: the tools we have may no longer be what the server
		// serves, so none of them is called until it lists again.
		s.addNotice(fmt.Sprintf("server %s: re-listing tools after list_changed failed: %v; its tools are withdrawn until Restart", srv.cfg.Name, err))
		s.publish(srv, nil, loadedState{})
		return true
	}
	s.recordFirstSight(s.publish(srv, raws, s.loadPins(context.Background())))
	s.logger.Info("server tools changed", "server", srv.cfg.Name, "tools", len(raws))
	return true
}

// relistPending reports whether a re-list of the server is under way.
func (srv *server) relistPending() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.relisting != nil
}

// listed waits until no re-list is pending for the server.
func (srv *server) listed(ctx context.Context) error {
	return srv.await(ctx, func() chan struct{} { return srv.relisting })
}

// await waits, no longer than ctx, until pending (read under srv.mu)
// returns nil: a re-list is signalled done by closing its channel, and
// another may have begun meanwhile.
func (srv *server) await(ctx context.Context, pending func() chan struct{}) error {
	for {
		srv.mu.Lock()
		ch := pending()
		srv.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// toolDef is the part of a raw tool definition mcphost reads. Everything
// else the server sent stays in the raw definition the digest covers.
type toolDef struct {
	Name         *string         `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Execution    struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// decode reads the fields mcphost uses by their exact keys. encoding/json
// matches struct fields case-insensitively: a definition with both
// "description" and "DESCRIPTION" (different keys to the digest and to a
// person reading the diff) would forward whichever came last. Keys are
// matched exactly instead, so what is forwarded is the field a reviewer
// sees under its own name.
func (d *toolDef) decode(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	field := func(key string, v any) error {
		if b, ok := m[key]; ok && string(b) != "null" {
			return json.Unmarshal(b, v)
		}
		return nil
	}
	var exec map[string]json.RawMessage
	err := errors.Join(field("name", &d.Name), field("title", &d.Title), field("description", &d.Description),
		field("execution", &exec))
	d.InputSchema, d.OutputSchema, d.Annotations = m["inputSchema"], m["outputSchema"], m["annotations"]
	if b, ok := exec["taskSupport"]; ok {
		err = errors.Join(err, json.Unmarshal(b, &d.Execution.TaskSupport))
	}
	return err
}

// read decodes raw as decode does and digests it, in one pass of the
// module's one JSON parser: the fields come from the very tree the digest
// (pin's, made by internal/canonical) is made of, and
// encoding/json's reflection and maps are not needed. A definition pin
// refuses (a repeated key, invalid UTF-8, a lone surrogate) cannot be
// pinned; decode still reads it, so that the notice can name the tool.
func (d *toolDef) read(raw json.RawMessage) (digest string, digestErr, err error) {
	var buf [8]canonical.Field // len(defPaths)
	digest, f, digestErr := canonical.Fields(raw, buf[:0], defPaths...)
	if digestErr != nil {
		// decode's reflection would take d, and with it every prepared
		// value, to the heap: it gets a copy.
		var err error
		*d, err = decoded(raw)
		return "", digestErr, err
	}
	var name string
	for i, dst := range []*string{&name, &d.Title, &d.Description} {
		if !stringField(f[i], dst) {
			return digest, nil, fmt.Errorf("its %s is not a string", defPaths[i][0])
		}
		if i == 0 && f[0].Raw != nil && string(f[0].Raw) != "null" {
			d.Name = &name
		}
	}
	d.InputSchema, d.OutputSchema, d.Annotations = f[3].Raw, f[4].Raw, f[5].Raw
	if exec := f[6].Raw; exec != nil && string(exec) != "null" {
		if exec[0] != '{' {
			return digest, nil, errors.New("its execution is not an object")
		}
		if !stringField(f[7], &d.Execution.TaskSupport) {
			return digest, nil, errors.New("its execution.taskSupport is not a string")
		}
	}
	return digest, nil, nil
}

// stringField reads f, a member read by canonical.Fields, into dst if it
// is a string, and reports whether it is one or absent (null reads as
// absent): a value of another JSON type, which json.Unmarshal would
// refuse, is false.
func stringField(f canonical.Field, dst *string) bool {
	switch {
	case f.Raw == nil || string(f.Raw) == "null":
	case f.Raw[0] == '"':
		*dst = f.Text
	default:
		return false
	}
	return true
}

func decoded(raw json.RawMessage) (toolDef, error) {
	var d toolDef
	err := d.decode(raw)
	return d, err
}

// prepared is the per-tool work of discovery that depends only on the raw
// definition: parsing, digest, schema closing.
type prepared struct {
	def toolDef
	// readErr says why def could not be read (def is then empty);
	// badName is its name, if that much could be.
	readErr   error
	badName   string
	digest    string
	digestErr error
	closed    *schema.Closed
	closeErr  error
	// Tool.StrictProblems and Tool.Schemas, made here, where the work is
	// spread over the cores, and shared by every listing's Tool that
	// reuses this: nothing changes them (callers get copies).
	problems map[string]string
	schemas  map[string]json.RawMessage
	// output checks structuredContent against the tool's outputSchema
	// (nil when it has none); outputErr says why it cannot be read.
	output    *schema.Closed
	outputErr error
}

// prepCache finds a listing's prepared work by the exact bytes of a
// definition. It holds the listing's own slices instead of a string copy
// of every definition: the raw definitions of a listing are never changed
// (they are what the digests cover and what is forwarded, and callers get
// copies), and a hash table of integers is nothing for the collector to
// scan. Equal hashes are only a hint; the bytes are compared.
type prepCache struct {
	seed  maphash.Seed
	raws  []json.RawMessage
	preps []prepared
	first map[uint64]int32 // hash → 1 + index of the latest definition with it
	next  []int32          // 1 + index of an earlier definition with the same hash, or 0
}

func newPrepCache(raws []json.RawMessage, preps []prepared) *prepCache {
	c := &prepCache{
		seed:  maphash.MakeSeed(),
		raws:  raws,
		preps: preps,
		first: make(map[uint64]int32, len(raws)),
		next:  make([]int32, len(raws)),
	}
	for i, raw := range raws {
		h := maphash.Bytes(c.seed, raw)
		c.next[i] = c.first[h]
		c.first[h] = int32(i + 1)
	}
	return c
}

func (c *prepCache) get(raw json.RawMessage) (prepared, bool) {
	if c == nil {
		return prepared{}, false
	}
	for i := c.first[maphash.Bytes(c.seed, raw)]; i != 0; i = c.next[i-1] {
		if bytes.Equal(c.raws[i-1], raw) {
			return c.preps[i-1], true
		}
	}
	return prepared{}, false
}

// prepare does the per-tool work for a listing. A definition identical to
// one of the server's previous listing reuses that result (a list_changed
// usually changes one tool of many); only the latest listing is kept.
func (srv *server) prepare(raws []json.RawMessage) []prepared {
	srv.mu.Lock()
	prev := srv.prepCache
	srv.mu.Unlock()
	out := make([]prepared, len(raws))
	one := func(i int) {
		if p, ok := prev.get(raws[i]); ok {
			out[i] = p
			return
		}
		out[i] = prepareOne(raws[i])
	}
	workers := min(runtime.GOMAXPROCS(0), len(raws)/parallelPrepare+1)
	if workers <= 1 {
		for i := range raws {
			one(i)
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(raws); i += workers {
					one(i)
				}
			}()
		}
		wg.Wait()
	}
	cache := newPrepCache(raws, out)
	srv.mu.Lock()
	srv.prepCache = cache
	srv.mu.Unlock()
	return out
}

func prepareOne(raw json.RawMessage) prepared {
	var p prepared
	digest, digestErr, err := p.def.read(raw)
	if err != nil {
		if p.def.Name != nil {
			p.badName = *p.def.Name // for the notice only
		}
		p.def = toolDef{} // a definition that cannot be read has no name
		p.readErr = err
		return p
	}
	if p.digest, p.digestErr = digest, digestErr; p.digestErr != nil {
		return p
	}
	input := p.def.InputSchema
	if len(input) == 0 || string(input) == "null" {
		p.closeErr = errors.New("it has no inputSchema")
		return p
	}
	if p.closed, p.closeErr = schema.Close(input); p.closeErr != nil {
		return p
	}
	if out := nonNull(p.def.OutputSchema); out != nil {
		p.output, p.outputErr = schema.Open(out)
	}
	profiles := schema.Profiles()
	p.problems = make(map[string]string, len(profiles))
	p.schemas = make(map[string]json.RawMessage, len(profiles))
	for _, pr := range profiles {
		p.problems[string(pr)] = p.closed.Problems[pr]
		p.schemas[string(pr)], _ = p.closed.For(pr)
	}
	return p
}

// build applies naming, schema closing, policy and pins to a server's raw
// tools. It returns the tools to publish, the first-seen tools to record,
// and notices.
func (srv *server) build(raws []json.RawMessage, ls loadedState) (entries []*toolEntry, recs []subject, notices []string) {
	cfg := srv.cfg
	preps := srv.prepare(raws)
	counts := make(map[string]int, len(preps))
	for _, p := range preps {
		if p.def.Name != nil {
			counts[*p.def.Name]++
		}
	}
	seen := make(map[string]bool, len(preps))
	unreadable := map[string]bool{} // names of tools skipped as unreadable
	for i, p := range preps {
		raw, d := raws[i], p.def
		if d.Name == nil {
			if p.readErr != nil {
				what := fmt.Sprintf("tool #%d of its list", i+1)
				if p.badName != "" {
					what = fmt.Sprintf("tool %q (#%d of its list)", printable(p.badName, 80), i+1)
					unreadable[p.badName] = true
				}
				notices = append(notices, fmt.Sprintf("server %s: skipped %s: its definition cannot be read: %v", cfg.Name, what, printable(p.readErr.Error(), 200)))
				continue
			}
			notices = append(notices, fmt.Sprintf("server %s: skipped a tool with no name (tool #%d of its list)", cfg.Name, i+1))
			continue
		}
		name := *d.Name
		shown := func() string { return printable(name, 80) } // for notices only
		if counts[name] > 1 {
			if !seen[name] {
				notices = append(notices, fmt.Sprintf("server %s lists tool %q %d times; skipped it (which one would be called?)", cfg.Name, shown(), counts[name]))
			}
			seen[name] = true
			continue
		}
		seen[name] = true
		model, err := ModelName(cfg.Name, name)
		if err != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: %s", cfg.Name, shown(), nameProblem(err)))
			continue
		}
		digest := p.digest
		if p.digestErr != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: its definition cannot be pinned: %v", cfg.Name, shown(), p.digestErr))
			continue
		}
		asTask := d.Execution.TaskSupport == "required"
		if asTask && srv.taskForm() == "" {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: it can only be called as a task (execution.taskSupport \"required\"), and %s", cfg.Name, shown(), noTasks(srv.negotiated())))
			continue
		}
		if p.closeErr != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: %v", cfg.Name, shown(), p.closeErr))
			continue
		}
		closed := p.closed
		t := Tool{
			Name:           model,
			Server:         cfg.Name,
			Tool:           name,
			Title:          d.Title,
			Description:    d.Description,
			Schema:         closed.Schema,
			Strict:         closed.Strict,
			StrictProblem:  closed.Problem,
			StrictProblems: p.problems,
			Schemas:        p.schemas,
			Fields:         closed.Fields,
			Digest:         digest,
			Annotations:    nonNull(d.Annotations),
			OutputSchema:   nonNull(d.OutputSchema),
			Definition:     raw,
			Decision:       cfg.policy(name),
			Pin:            PinUnpinned,
		}
		t.Unchecked, t.CheckProblem = closed.Unchecked, closed.CheckProblem
		if t.CheckProblem != "" && t.Decision != Deny {
			notices = append(notices, fmt.Sprintf("tool %s: its input schema cannot be checked (%s), so every call is refused", model, printable(t.CheckProblem, 200)))
		}
		if t.Fields == nil {
			t.Fields = []string{}
		}
		e := &toolEntry{Tool: t, closed: closed, srv: srv, task: asTask, output: p.output}
		switch {
		case p.outputErr != nil:
			e.outputProblem = p.outputErr.Error()
		case p.output != nil && p.output.CheckProblem != "":
			e.outputProblem = p.output.CheckProblem
		}
		if e.outputProblem != "" && t.Decision != Deny {
			notices = append(notices, fmt.Sprintf("tool %s: its output schema cannot be checked (%s), so its results are refused", model, printable(e.outputProblem, 200)))
		}
		if t.Decision != Deny {
			rec, notice := srv.pinTool(e, ls)
			if rec != nil {
				recs = append(recs, *rec)
			}
			if notice != "" {
				notices = append(notices, notice)
			}
		}
		entries = append(entries, e)
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"allow", cfg.Allow}, {"deny", cfg.Deny}} {
		for _, n := range list.names {
			switch {
			case seen[n]:
			case unreadable[n]:
				notices = append(notices, fmt.Sprintf("[mcp.%s] %s names %q, whose definition the server sent cannot be read (see its notice)", cfg.Name, list.key, printable(n, 80)))
			default:
				notices = append(notices, fmt.Sprintf("[mcp.%s] %s names %q, which the server does not offer", cfg.Name, list.key, printable(n, 80)))
			}
		}
	}
	if lock := srv.sess.lock; lock != nil && ls.err == nil {
		switch {
		case !ls.serverReviewed(cfg.Name):
			notices = append(notices, fmt.Sprintf("server %s is not in the lock %s: nothing of it is reviewed, so its tools are held from the model until a person records it (%s)", cfg.Name, lock.path, srv.sess.approveHint(cfg.Name)))
		case len(srv.drift()) > 0:
			notices = append(notices, fmt.Sprintf("server %s: its program changed since the lock %s recorded it (%s): its allowed tools need approval until it is re-reviewed (%s)",
				cfg.Name, lock.path, strings.Join(srv.drift(), "; "), srv.sess.approveHint("program:"+cfg.Name)))
		}
	}
	if ls.err == nil && ls.v != nil && (srv.sess.lock == nil || ls.serverReviewed(cfg.Name)) {
		if n := srv.newToolsNotice(entries, ls); n != "" {
			notices = append(notices, n)
		}
		for _, tool := range ls.v.recordedTools(cfg.Name) {
			if !seen[tool] {
				notices = append(notices, fmt.Sprintf("server %s no longer lists tool %q, which was reviewed", cfg.Name, printable(tool, 80)))
			}
		}
	}
	return entries, recs, notices
}

func nameProblem(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "cannot be named"); i >= 0 {
		return msg[i:]
	}
	return msg
}

func nonNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return r
}

// Bounds on re-listing after notifications/tools/list_changed. Re-lists of
// one server are coalesced: one runs at a time, and any number of
// notifications during it make one more. A server that sends a
// notification during each of maxRelistRounds re-lists in a row does not
// settle, and is stopped.
const (
	relistInterval  = 250 * time.Millisecond // from the start of one re-list of a server to the next
	maxRelistRounds = 10
)

// defPaths are the members of a definition read reads, in the order of the
// fields it returns.
var defPaths = [][]string{
	{"name"}, {"title"}, {"description"},
	{"inputSchema"}, {"outputSchema"}, {"annotations"},
	{"execution"}, {"execution", "taskSupport"},
}

// parallelPrepare is the list size from which discovery spreads the
// per-tool work over the cores (the server is idle meanwhile).
const parallelPrepare = 256
