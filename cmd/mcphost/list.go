package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/mcphost/mcphost/internal/bytesize"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/toolsearch"
)

// palette colours the decision column; empty strings mean no colour.
type palette struct{ allow, approval, deny, dim, reset string }

// colorFor colours output only for a terminal, and never when NO_COLOR is
// set (https://no-color.org).
func colorFor(w io.Writer) palette {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return palette{}
	}
	if !term.IsTerminal(int(f.Fd())) {
		return palette{}
	}
	return palette{allow: "\x1b[32m", approval: "\x1b[33m", deny: "\x1b[31m", dim: "\x1b[2m", reset: "\x1b[0m"}
}

func (p palette) decision(d mcphost.Decision) string {
	c := map[mcphost.Decision]string{mcphost.Allow: p.allow, mcphost.Approval: p.approval, mcphost.Deny: p.deny}[d]
	if c == "" {
		return string(d)
	}
	return c + string(d) + p.reset
}

// nameWidth is the widest tool name kept on one line with its columns in 80
// columns; a longer name gets a line of its own.
const nameWidth = 40

// writeList prints the human form of `mcphost list`: a table of tools, one
// of servers, then the notices. Server-supplied text goes through
// pin.Visible so it cannot hide anything or drive the terminal.
func writeList(w io.Writer, tools []mcphost.Tool, prompts []mcphost.Prompt, servers []mcphost.ServerInfo, notices []string, p palette) {
	ctx := contextCosts(tools)
	width := len("TOOL")
	for _, t := range tools {
		if n := len(t.Name); n > width && n <= nameWidth {
			width = n
		}
	}
	row := func(name, decision, strict, pinStatus, tokens, digest string, pad int) {
		if len(name) > width {
			fmt.Fprintln(w, name)
			name = ""
		}
		fmt.Fprintf(w, "%-*s  %s%*s  %-6s  %-8s  %-9s  %s\n", width, name, decision, pad, "", strict, pinStatus, tokens, digest)
	}
	if len(tools) == 0 {
		fmt.Fprintln(w, "no tools")
	} else {
		row("TOOL", "DECISION", "STRICT", "PIN", "TOKENS", "DIGEST", 0)
		for _, t := range tools {
			strict := "no"
			if t.Strict {
				strict = "yes"
			}
			decision, width := p.decision(t.Decision), len(t.Decision)
			if t.Withheld {
				decision, width = p.dim+"held"+p.reset, len("held")
			}
			row(t.Name, decision, strict, string(t.Pin), ctx.tools[t.Name].short(), shortDigest(t.Digest), len("DECISION")-width)
		}
	}
	if len(prompts) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%-*s  %-8s  %s\n", width, "PROMPT", "PIN", "DIGEST")
		for _, pr := range prompts {
			name := pin.Visible(pr.Server + "/" + pr.Name)
			if len(name) > width {
				fmt.Fprintln(w, name)
				name = ""
			}
			fmt.Fprintf(w, "%-*s  %-8s  %s\n", width, name, pr.Pin, shortDigest(pr.Digest))
		}
	}
	fmt.Fprintln(w)
	sw, stw := len("SERVER"), len("running")
	for _, s := range servers {
		sw = max(sw, len(s.Name))
		stw = max(stw, len(s.State))
	}
	fmt.Fprintf(w, "%-*s  %-*s  %5s  %s\n", sw, "SERVER", stw, "STATE", "TOOLS", "CONFINEMENT")
	for _, s := range servers {
		fmt.Fprintf(w, "%-*s  %-*s  %5d  %s\n", sw, s.Name, stw, s.State, s.Tools, s.Confinement)
		if c, ok := ctx.servers[s.Name]; ok {
			fmt.Fprintf(w, "%*s  context: %s per turn\n", sw, "", c.long())
		}
		writeNetwork(w, sw+2, pin.Visible(s.Network))
		if s.Limits != "" {
			fmt.Fprintf(w, "%*s  limits: %s\n", sw, "", s.Limits)
		}
		for _, l := range s.Lacks {
			fmt.Fprintf(w, "%*s  lacks: %s\n", sw, "", l)
		}
		if s.Protocol != "" {
			fmt.Fprintf(w, "%*s  protocol: %s\n", sw, "", pin.Visible(s.Protocol))
		}
		if s.Instructions != "" {
			fmt.Fprintf(w, "%*s  instructions (%s, %d bytes): %s\n", sw, "", s.InstructionsPin, len(s.Instructions),
				strings.ReplaceAll(pin.Visible(s.Instructions), "\n", "\n"+strings.Repeat(" ", sw+4)))
		}
		for i, c := range s.ProgramCovers {
			// What the program's identity and protection cover, so that
			// nothing implies more than mcphost can tell.
			label := "program covers: "
			pad := strings.Repeat(" ", sw+2+len(label))
			if i > 0 {
				label = strings.Repeat(" ", len(label))
			}
			writeWrapped(w, strings.Repeat(" ", sw+2)+label, pad+"  ", pin.Visible(c))
		}
		if len(s.ProgramChanged) > 0 {
			fmt.Fprintf(w, "%*s  %sprogram changed since the lock recorded it:%s %s\n", sw, "", p.approval, p.reset, pin.Visible(strings.Join(s.ProgramChanged, "; ")))
		}
		if len(s.Widens) > 0 {
			fmt.Fprintf(w, "%*s  %swidens the default:%s %s\n", sw, "", p.approval, p.reset, pin.Visible(strings.Join(s.Widens, "; ")))
		}
	}
	if len(tools) > 0 {
		fmt.Fprintf(w, "\ntool definitions: %s on every turn\n(estimates; TOKENS is openai/anthropic; toolsearch offers tools on demand)\n", ctx.total.long())
	}
	if len(notices) > 0 {
		fmt.Fprintf(w, "\n%snotices:%s\n", p.dim, p.reset)
		for _, n := range notices {
			fmt.Fprintf(w, "- %s\n", visibleLines(n, "  "))
		}
	}
}

// writeNetwork prints a server's network grant under its row, indented,
// wrapped after a comma to stay within 80 columns where it can.
func writeNetwork(w io.Writer, indent int, network string) {
	pad := strings.Repeat(" ", indent)
	line := pad + "network: "
	for i, d := range strings.Split(network, ", ") {
		if i > 0 {
			if len(line)+2+len(d) > 80 {
				fmt.Fprintln(w, line+",")
				line = pad + "         " + d
				continue
			}
			line += ", "
		}
		line += d
	}
	fmt.Fprintln(w, line)
}

// writeWrapped prints text after first, broken between words to stay
// within 80 columns where it can, each further line after cont.
func writeWrapped(w io.Writer, first, cont, text string) {
	line := first
	start := true
	for _, word := range strings.Fields(text) {
		if !start && len(line)+1+len(word) > 80 {
			fmt.Fprintln(w, line)
			line, start = cont, true
		}
		if !start {
			line += " "
		}
		line += word
		start = false
	}
	fmt.Fprintln(w, line)
}

// shortDigest keeps the version prefix and 8 hex digits: enough to tell
// two definitions apart at a glance.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+9 {
		return d[:i+9]
	}
	return d
}

// writeReviews prints the server tables that did not start because they
// need a person's review: each table (or what changed in it), escaped by
// the library, and the command that reviews it.
func writeReviews(w io.Writer, reviews []mcphost.Review, p palette) {
	if len(reviews) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%sserver tables needing review (not started: the config lies where servers can write):%s\n", p.approval, p.reset)
	for _, r := range reviews {
		fmt.Fprintf(w, "- [mcp.%s], %s: ", r.Server, r.Pin)
		fmt.Fprintf(w, "%s", strings.ReplaceAll(strings.TrimRight(r.Text, "\n"), "\n", "\n  "))
		fmt.Fprintf(w, "\n  review it: %s\n", pin.Visible(r.Approve))
	}
}

// profileCost is what a tool definition, or a set of them, costs in the
// model's context per provider profile (toolsearch.Cost).
type profileCost map[string]struct {
	Bytes  int `json:"bytes"`
	Tokens int `json:"tokens"`
}

// costs is what list shows of context costs: per tool (denied and held
// ones priced as if offered), and, for the offered tools only, per server
// and in all.
type costs struct {
	tools   map[string]profileCost
	servers map[string]profileCost
	total   profileCost
}

// contextCosts prices tools for each provider profile.
func contextCosts(tools []mcphost.Tool) costs {
	c := costs{tools: map[string]profileCost{}, servers: map[string]profileCost{}, total: profileCost{}}
	for _, t := range tools {
		pc := profileCost{}
		for _, profile := range []string{"openai", "anthropic"} {
			b, n, err := toolsearch.Cost(t, profile)
			if err != nil {
				continue
			}
			pc.add(profile, b, n)
			if t.Offered() {
				if c.servers[t.Server] == nil {
					c.servers[t.Server] = profileCost{}
				}
				c.servers[t.Server].add(profile, b, n)
				c.total.add(profile, b, n)
			}
		}
		c.tools[t.Name] = pc
	}
	return c
}

func (pc profileCost) add(profile string, bytes, tokens int) {
	v := pc[profile]
	v.Bytes += bytes
	v.Tokens += tokens
	pc[profile] = v
}

// short is "openai/anthropic" token estimates, for the tools table.
func (pc profileCost) short() string {
	if pc == nil {
		return ""
	}
	return fmt.Sprintf("~%d/%d", pc["openai"].Tokens, pc["anthropic"].Tokens)
}

// long says the cost in words, openai's and anthropic's.
func (pc profileCost) long() string {
	return fmt.Sprintf("~%d/%d tokens (%s/%s)",
		pc["openai"].Tokens, pc["anthropic"].Tokens, bytesize.Format(int64(pc["openai"].Bytes)), bytesize.Format(int64(pc["anthropic"].Bytes)))
}
