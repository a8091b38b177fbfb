package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// With -lock F, reviews are read from and recorded into the lock file F (a
// team's, committed with the project) instead of the personal state: tool
// reviews, and for each server its reviewed table and program identity.
// Trusting F's content is the library's business (mcphost.LoadLock).

// libOpts are the library options the lock functions need.
func (c *cli) libOpts() mcphost.Options {
	return mcphost.Options{Worktree: c.worktree, StateDir: c.state}
}

// reviewTablesInLock is reviewTables with a lock: a table of a config that
// servers could write starts only as the lock records it.
func (c *cli) reviewTablesInLock(ctx context.Context, servers []mcphost.ServerConfig, config, writable string) ([]mcphost.ServerConfig, []tableReview, error) {
	l, err := mcphost.LoadLock(ctx, c.lock, servers, c.libOpts())
	if err != nil {
		return nil, nil, fmt.Errorf("%s lies in %s, where servers can write, so its server tables start only as the lock reviewed them, and the lock cannot be used: %w", c.config, writable, err)
	}
	return c.sortTables(servers, config, writable, func(server string) (string, json.RawMessage, bool) {
		if prev := l.Servers[server].Table; prev != nil {
			return prev.Digest, prev.Definition, true
		}
		return "", nil, false
	})
}

// approveTablesIntoLock records, for each named server, its table and its
// program as they are now into the lock, after showing what changed since
// the lock's record and asking (unless yes). It reports whether all were
// recorded.
func (c *cli) approveTablesIntoLock(ctx context.Context, names []string, yes bool, ask func(string) bool) bool {
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
	l, err := mcphost.LoadLock(ctx, c.lock, servers, c.libOpts())
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
		return false
	}
	byName := map[string]mcphost.ServerConfig{}
	for _, sc := range servers {
		byName[sc.Name] = sc
	}
	type record struct {
		name    string
		table   pin.LockEntry
		program []pin.ProgramFile
	}
	var recs []record
	ok := true
	for _, name := range names {
		sc, found := byName[name]
		if !found {
			fmt.Fprintf(c.stderr, "mcphost approve: %s has no [mcp.%s] table\n", c.config, pin.Visible(name))
			ok = false
			continue
		}
		def, err := sc.Definition()
		var table pin.LockEntry
		if err == nil {
			table, err = pin.NewLockEntry(def)
		}
		var program []pin.ProgramFile
		if err == nil {
			program, err = mcphost.ProgramIdentity(sc, c.libOpts())
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: [mcp.%s]: %s\n", name, pin.Visible(err.Error()))
			ok = false
			continue
		}
		prev, inLock := l.Servers[name]
		fmt.Fprintf(c.stdout, "server %s in the lock %s:\n", name, c.lock)
		r := tableReview{Server: name, Status: "new", Definition: def}
		switch {
		case prev.Table != nil && prev.Table.Digest == table.Digest:
			fmt.Fprintln(c.stdout, "its table is unchanged since the lock's review.")
		case prev.Table != nil:
			changes, err := pin.Diff(prev.Table.Definition, def)
			if err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
				ok = false
				continue
			}
			r.Status, r.Changes = "changed", fieldChanges(changes)
			fallthrough
		default:
			if err := writeReview(c.stdout, r); err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
				ok = false
				continue
			}
		}
		if changes := mcphost.ProgramChanges(prev.Program, program); !inLock || len(changes) > 0 {
			fmt.Fprintln(c.stdout, "its program:")
			for _, f := range program {
				fmt.Fprintf(c.stdout, "  %s %s %s\n", f.Role, pin.Visible(f.Path), fileIdentity(f))
			}
			if inLock {
				fmt.Fprintln(c.stdout, "changed since the lock's review:")
				for _, ch := range changes {
					fmt.Fprintf(c.stdout, "  %s\n", ch)
				}
			}
		} else {
			fmt.Fprintln(c.stdout, "its program is unchanged since the lock's review.")
		}
		if !yes && !ask(fmt.Sprintf("Record [mcp.%s] and its program in %s?", name, c.lock)) {
			fmt.Fprintf(c.stdout, "not recorded: [mcp.%s]\n", name)
			ok = false
			continue
		}
		recs = append(recs, record{name, table, program})
	}
	if len(recs) == 0 {
		return ok
	}
	err = mcphost.UpdateLock(ctx, c.lock, servers, c.libOpts(), func(l *pin.Lock) error {
		for _, r := range recs {
			ls := l.Servers[r.name]
			table := r.table
			ls.Table, ls.Program = &table, r.program
			l.Servers[r.name] = ls
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
		return false
	}
	for _, r := range recs {
		fmt.Fprintf(c.stdout, "recorded: [mcp.%s] and its program in %s\n", r.name, c.lock)
	}
	return ok
}

func fileIdentity(f pin.ProgramFile) string {
	var parts []string
	if f.Package != "" {
		parts = append(parts, pin.Visible(f.Package))
	}
	if f.Digest != "" {
		parts = append(parts, f.Digest)
	} else {
		parts = append(parts, "(a system interpreter: not pinned)")
	}
	return strings.Join(parts, " ")
}

// acceptLock records the lock's content, as shown, as trusted by this
// person: for a lock they reviewed but cannot or will not commit.
func (c *cli) acceptLock(yes bool, in *bufio.Reader) int {
	data, err := os.ReadFile(c.lock)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
		return exitFail
	}
	l, err := pin.ParseLock(data)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s: %s\n", c.lock, pin.Visible(err.Error()))
		return exitFail
	}
	var servers []mcphost.ServerConfig
	if cfg, err := os.ReadFile(c.config); err == nil {
		servers, _ = mcphost.Parse(cfg)
	}
	fmt.Fprintf(c.stdout, "the lock %s (%s):\n", c.lock, pin.DigestBytes(data))
	names := make([]string, 0, len(l.Servers))
	for name := range l.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ls := l.Servers[name]
		fmt.Fprintf(c.stdout, "server %s:\n", pin.Visible(name))
		for _, f := range ls.Program {
			fmt.Fprintf(c.stdout, "  %s %s %s\n", f.Role, pin.Visible(f.Path), fileIdentity(f))
		}
		tools := make([]string, 0, len(ls.Tools))
		for t := range ls.Tools {
			tools = append(tools, pin.Visible(t))
		}
		sort.Strings(tools)
		fmt.Fprintf(c.stdout, "  reviewed tools: %s\n", strings.Join(tools, ", "))
	}
	fmt.Fprintf(c.stdout, "Review the whole file (git diff -- %s shows what changed) before you trust it.\n", c.lock)
	if !yes && !ask(in, c.stdout, fmt.Sprintf("Trust %s as it is?", c.lock)) {
		fmt.Fprintf(c.stdout, "not recorded: %s\n", c.lock)
		return exitFail
	}
	if err := mcphost.AcceptLock(c.lock, data, servers, c.libOpts()); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
		return exitFail
	}
	fmt.Fprintf(c.stdout, "recorded: %s is trusted as it is\n", c.lock)
	return exitOK
}

// approveGone handles a model name that no running tool has but the lock
// holds, for a server that runs: its server no longer offers it, and
// recording that removes it from the lock. handled is false for any other
// name.
func (c *cli) approveGone(ctx context.Context, s *mcphost.Session, name string, yes bool, in *bufio.Reader) (handled, ok bool) {
	l, err := mcphost.LoadLock(ctx, c.lock, c.configs, c.libOpts())
	if err != nil {
		return false, false
	}
	for _, srv := range s.Servers() {
		if srv.State != mcphost.ServerRunning {
			continue
		}
		for tool := range l.Servers[srv.Name].Tools {
			if m, err := mcphost.ModelName(srv.Name, tool); err != nil || m != name {
				continue
			}
			fmt.Fprintf(c.stdout, "%s (server %s, tool %s) is in the lock, but the server no longer offers it.\n", name, srv.Name, pin.Visible(tool))
			if !yes && !ask(in, c.stdout, fmt.Sprintf("Remove %s from %s?", name, c.lock)) {
				fmt.Fprintf(c.stdout, "not recorded: %s\n", name)
				return true, false
			}
			err := mcphost.UpdateLock(ctx, c.lock, c.configs, c.libOpts(), func(l *pin.Lock) error {
				ls := l.Servers[srv.Name]
				if _, ok := ls.Tools[tool]; !ok {
					return errors.New("it is no longer in the lock")
				}
				delete(ls.Tools, tool)
				l.Servers[srv.Name] = ls
				return nil
			})
			if err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %s: %s\n", name, pin.Visible(err.Error()))
				return true, false
			}
			fmt.Fprintf(c.stdout, "recorded: %s removed from %s\n", name, c.lock)
			return true, true
		}
	}
	return false, false
}

// checkLock is check's verdict with a lock: every difference between what
// runs and what the lock recorded is a line naming it and the command that
// reviews it, and makes check exit 1. code is what check found before
// (servers that did not start, tables needing review).
func (c *cli) checkLock(ctx context.Context, s *mcphost.Session, code int) int {
	if s.StateError() != nil {
		// Said already (nothing could be checked against the lock).
		return exitFail
	}
	l, err := mcphost.LoadLock(ctx, c.lock, c.configs, c.libOpts())
	if err != nil {
		fmt.Fprintf(c.stdout, "the lock cannot be used: %s\n", pin.Visible(err.Error()))
		return exitFail
	}
	drift := 0
	say := func(format string, args ...any) {
		drift++
		fmt.Fprintf(c.stdout, format+"\n", args...)
	}
	tools := s.AllTools()
	byConfig := map[string]mcphost.ServerConfig{}
	for _, sc := range c.configs {
		byConfig[sc.Name] = sc
	}
	for _, srv := range s.Servers() {
		if srv.State != mcphost.ServerRunning {
			continue
		}
		entry, inLock := l.Servers[srv.Name]
		if !inLock {
			say("server %s is not in the lock: review its table and program with: %s", srv.Name, c.approveCommand(srv.Name))
		}
		if len(srv.ProgramChanged) > 0 {
			say("program changed: server %s: %s; review it with: %s", srv.Name, pin.Visible(strings.Join(srv.ProgramChanged, "; ")), c.approveCommand(srv.Name))
		}
		if sc, ok := byConfig[srv.Name]; ok && entry.Table != nil {
			if def, err := sc.Definition(); err == nil {
				if d, err := pin.Digest(def); err == nil && d != entry.Table.Digest {
					fields := ""
					if changes, err := pin.Diff(entry.Table.Definition, def); err == nil {
						fields = " (" + pin.Fields(changes) + ")"
					}
					say("table changed: [mcp.%s]%s differs from the lock's; review it with: %s", srv.Name, fields, c.approveCommand(srv.Name))
				}
			}
		}
		offered := map[string]bool{}
		for _, t := range tools {
			if t.Server == srv.Name {
				offered[t.Tool] = true
			}
		}
		var gone []string
		for tool := range entry.Tools {
			if !offered[tool] {
				gone = append(gone, tool)
			}
		}
		slices.Sort(gone)
		for _, tool := range gone {
			m, err := mcphost.ModelName(srv.Name, tool)
			if err != nil {
				m = srv.Name + "/" + tool
			}
			say("gone: %s is in the lock but server %s no longer offers it; record that with: %s", pin.Visible(m), srv.Name, c.approveCommand(m))
		}
	}
	for _, t := range tools {
		allowed := false
		if sc, ok := byConfig[t.Server]; ok {
			allowed = slices.Contains(sc.Allow, t.Tool) && !slices.Contains(sc.Deny, t.Tool)
		}
		switch {
		case t.Decision == mcphost.Deny:
		case t.Pin == mcphost.PinChanged:
			say("changed: %s (%s) changed since the lock's review; review it with: %s", t.Name, pin.Visible(strings.Join(t.Changed, ", ")), c.approveCommand(t.Name))
		case t.Pin != mcphost.PinSame && allowed:
			say("unreviewed: %s is allowed but not in the lock; review it with: %s", t.Name, c.approveCommand(t.Name))
		case t.Pin != mcphost.PinSame:
			say("unreviewed: %s is offered (each call asks) but not in the lock; review it with: %s", t.Name, c.approveCommand(t.Name))
		}
	}
	if drift > 0 {
		fmt.Fprintf(c.stdout, "%d difference(s) from the lock %s\n", drift, c.lock)
		return exitFail
	}
	if code != exitOK {
		return code
	}
	fmt.Fprintf(c.stdout, "ok: every server and offered tool is as the lock %s recorded\n", c.lock)
	return exitOK
}

// programChanged reports whether the session found the program of server
// changed since the lock's record.
func (c *cli) programChanged(s *mcphost.Session, server string) bool {
	for _, srv := range s.Servers() {
		if srv.Name == server {
			return len(srv.ProgramChanged) > 0
		}
	}
	return false
}
