package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// A config that lies where a server could write it (the worktree, a write
// path of one of its servers) might have been planted or changed by one: its
// server tables start only as a person reviewed them. The review is recorded
// in the state directory (outside the worktree, locked and atomic, in
// package pin) as the digest and definition of each table, per config path.

// tableReview is a server table that needs a person's review before it
// starts.
type tableReview struct {
	Server string `json:"server"`
	// Config is the config file's absolute path, resolved.
	Config string `json:"config"`
	// Writable is the writable path the config lies in.
	Writable string `json:"writable"`
	// Status is "new" (never reviewed) or "changed" (since its review).
	Status string `json:"status"`
	// Definition is the whole table as it would run.
	Definition json.RawMessage `json:"definition"`
	// Changes are what changed since the review, for "changed".
	Changes []fieldChange `json:"changes,omitempty"`
	// Approve is the command that reviews it.
	Approve string `json:"approve"`
}

// fieldChange is one pin.Change, in list -json's spelling.
type fieldChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

func fieldChanges(cs []pin.Change) []fieldChange {
	out := make([]fieldChange, len(cs))
	for i, c := range cs {
		out[i] = fieldChange{c.Field, c.Old, c.New}
	}
	return out
}

// configPlace says whether the config file c reads lies where a server could
// write it, and returns its resolved path and the writable path holding it.
func (c *cli) configPlace(servers []mcphost.ServerConfig) (config, writable string, err error) {
	abs, err := filepath.Abs(c.config)
	if err != nil {
		return "", "", err
	}
	canon, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", err
	}
	roots, err := mcphost.WritablePaths(servers, mcphost.Options{Worktree: c.worktree})
	if err != nil {
		return "", "", err
	}
	for _, r := range roots {
		// The link a person named, or the file it leads to: either could
		// have been put there by a server.
		if under(abs, r) || under(canon, r) {
			return canon, r, nil
		}
	}
	return canon, "", nil
}

func under(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// stateDir is the state directory the session will use.
func (c *cli) stateDir() (string, error) {
	if c.state != "" {
		return filepath.Abs(c.state)
	}
	wt, err := filepath.Abs(c.worktree)
	if err == nil {
		wt, err = filepath.EvalSymlinks(wt)
	}
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return mcphost.DefaultStateDir(wt)
}

// reviewTables splits servers into those that may start and the tables that
// need review. It fails when the state cannot be read while the config
// needs reviews: then no table can be trusted.
func (c *cli) reviewTables(ctx context.Context, servers []mcphost.ServerConfig) ([]mcphost.ServerConfig, []tableReview, error) {
	config, writable, err := c.configPlace(servers)
	if err != nil {
		return nil, nil, err
	}
	if writable == "" {
		return servers, nil, nil
	}
	if c.lock != "" {
		return c.reviewTablesInLock(ctx, servers, config, writable)
	}
	dir, err := c.stateDir()
	if err != nil {
		return nil, nil, err
	}
	st, err := (&pin.Store{Dir: dir}).Load()
	if err != nil {
		return nil, nil, fmt.Errorf("%s lies in %s, where servers can write, so its server tables start only as reviewed, and the reviews cannot be read: %w", c.config, writable, err)
	}
	return c.sortTables(servers, config, writable, func(server string) (string, json.RawMessage, bool) {
		prev, ok := st.Tables[pin.TableKey(config, server)]
		return prev.Digest, prev.Definition, ok
	})
}

// sortTables splits servers into those whose table is as reviewed, to
// start, and reviews of the others; reviewed returns a server's reviewed
// table (its digest and definition), and false if it has none.
func (c *cli) sortTables(servers []mcphost.ServerConfig, config, writable string, reviewed func(server string) (digest string, def json.RawMessage, ok bool)) ([]mcphost.ServerConfig, []tableReview, error) {
	var start []mcphost.ServerConfig
	var reviews []tableReview
	for _, sc := range servers {
		def, err := sc.Definition()
		if err != nil {
			return nil, nil, err
		}
		d, err := pin.Digest(def)
		if err != nil {
			return nil, nil, err
		}
		prevDigest, prevDef, ok := reviewed(sc.Name)
		if ok && prevDigest == d {
			start = append(start, sc)
			continue
		}
		r := tableReview{Server: sc.Name, Config: config, Writable: writable, Status: "new", Definition: def, Approve: c.approveCommand(sc.Name)}
		if ok {
			changes, err := pin.Diff(prevDef, def)
			if err != nil {
				return nil, nil, err
			}
			r.Status, r.Changes = "changed", fieldChanges(changes)
		}
		reviews = append(reviews, r)
	}
	return start, reviews, nil
}

// approveCommand is the command line that reviews a server's table, with
// the flags this invocation was given.
func (c *cli) approveCommand(server string) string {
	args := []string{"mcphost", "approve", "-config", shellQuote(c.config)}
	if c.worktree != "." {
		args = append(args, "-worktree", shellQuote(c.worktree))
	}
	if c.state != "" {
		args = append(args, "-state", shellQuote(c.state))
	}
	if c.lock != "" {
		args = append(args, "-lock", shellQuote(c.lock))
	}
	return strings.Join(append(args, server), " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeReview shows one table for review: its changes, or the whole table.
func writeReview(w io.Writer, r tableReview) error {
	if r.Status == "changed" {
		fmt.Fprintln(w, "changed since its review:")
		changes := make([]pin.Change, len(r.Changes))
		for i, c := range r.Changes {
			changes[i] = pin.Change{Field: c.Field, Old: c.Old, New: c.New}
		}
		return pin.Format(w, changes)
	}
	fmt.Fprintln(w, "not reviewed before; the whole table:")
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Definition, &m); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var buf bytes.Buffer
		if err := json.Compact(&buf, m[k]); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s = %s\n", pin.Visible(k), pin.Visible(buf.String()))
	}
	return nil
}

// approveTables records the review of the named servers' tables, after
// showing each and asking (unless yes). It reports whether all were
// recorded.
func (c *cli) approveTables(ctx context.Context, names []string, yes bool, ask func(string) bool) bool {
	if c.lock != "" {
		return c.approveTablesIntoLock(ctx, names, yes, ask)
	}
	data, err := os.ReadFile(c.config)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return false
	}
	servers, err := mcphost.Parse(data)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %s: %v\n", c.config, err)
		return false
	}
	config, writable, err := c.configPlace(servers)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return false
	}
	dir, err := c.stateDir()
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return false
	}
	store := &pin.Store{Dir: dir}
	st, err := store.Load()
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return false
	}
	byName := map[string]mcphost.ServerConfig{}
	for _, sc := range servers {
		byName[sc.Name] = sc
	}
	ok := true
	type record struct {
		key   string
		entry pin.Entry
	}
	var recs []record
	for _, name := range names {
		sc, found := byName[name]
		if !found {
			fmt.Fprintf(c.stderr, "mcphost approve: %s has no [mcp.%s] table\n", c.config, pin.Visible(name))
			ok = false
			continue
		}
		def, err := sc.Definition()
		if err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
			ok = false
			continue
		}
		r := tableReview{Server: name, Config: config, Status: "new", Definition: def}
		key := pin.TableKey(config, name)
		if prev, seen := st.Tables[key]; seen {
			changes, err := pin.Diff(prev.Definition, def)
			if err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
				ok = false
				continue
			}
			r.Status, r.Changes = "changed", fieldChanges(changes)
		}
		where := "outside every path its servers can write"
		if writable != "" {
			where = "in " + writable + ", where servers can write"
		}
		fmt.Fprintf(c.stdout, "server table [mcp.%s] of %s (%s): %s\n", name, config, where, r.Status)
		if r.Status == "changed" && len(r.Changes) == 0 {
			fmt.Fprintln(c.stdout, "unchanged since its review.")
		} else if err := writeReview(c.stdout, r); err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
			ok = false
			continue
		}
		if !yes && !ask(fmt.Sprintf("Let [mcp.%s] start as shown?", name)) {
			fmt.Fprintf(c.stdout, "not recorded: [mcp.%s]\n", name)
			ok = false
			continue
		}
		e, err := pin.NewEntry(def, time.Now())
		if err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
			ok = false
			continue
		}
		recs = append(recs, record{key, e})
	}
	if len(recs) == 0 {
		return ok
	}
	err = store.Update(func(st *pin.State) error {
		for _, r := range recs {
			st.Tables[r.key] = r.entry
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
		return false
	}
	for _, r := range recs {
		name, _, _ := strings.Cut(r.key, "@")
		fmt.Fprintf(c.stdout, "recorded: [mcp.%s]\n", name)
	}
	return ok
}

// isServerName tells a server name from a tool's model name among
// approve's arguments: model names always hold "__", server names never
// hold "_".
func isServerName(arg string) bool {
	return mcphost.ValidServerName(arg) == nil
}
