package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mcphost/mcphost/internal/bytesize"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// importOptions is the person's configuration import consults (their
// npm, uv and pip settings); the zero value is the real one, and tests
// replace it.
var importOptions mcphost.ImportOptions

// importConfig is `mcphost import FILE`: it prints, for the person to
// review and append to mcphost.toml, the [mcp.<name>] tables of another
// client's MCP configuration, its notes as TOML comments first.
func (c *cli) importConfig(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprint(c.stderr, `Usage: mcphost import FILE|-

Prints the [mcp.<name>] tables of another client's MCP server configuration,
with notes as comments, ready to review and append to mcphost.toml. FILE
(or standard input, for -) holds a server's JSON as its README gives it:
{"mcpServers": {...}} (Claude Desktop, Cursor, Claude Code's .mcp.json),
{"servers": {...}} (VS Code), a fragment of one, or Codex's
[mcp_servers.<name>] TOML. Secrets are not copied: they become env_pass.

Examples:
  mcphost import claude_desktop_config.json >> mcphost.toml
  pbpaste | mcphost import - >> mcphost.toml
`)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		fmt.Fprintln(c.stderr, "mcphost import: name one FILE, or - for standard input")
		return exitUsage
	}
	name := pos[0]
	var data []byte
	if name == "-" {
		name = "standard input"
		data, err = io.ReadAll(io.LimitReader(c.stdin, hostfile.MaxConfig+1))
		if err == nil && len(data) > hostfile.MaxConfig {
			err = fmt.Errorf("it holds more than %s, more than any client's configuration", bytesize.Format(hostfile.MaxConfig))
		}
		if err != nil {
			err = fmt.Errorf("standard input: %w", err)
		}
	} else {
		// Pasted or downloaded, the file is someone else's text: read
		// as mcphost reads its own config, a regular file, bounded.
		data, err = hostfile.Read(name, hostfile.MaxConfig)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost import: %s\n", visibleLines(err.Error(), "  "))
		return exitFail
	}
	c.awaitSignals() // importing may ask npm, uv or pip
	im, err := mcphost.Import(ctx, data, importOptions)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost import: %s: %s\n", pin.Visible(name), visibleLines(err.Error(), "  "))
		if errors.Is(err, mcphost.ErrImportFormat) {
			fmt.Fprintln(c.stderr, "mcphost import: paste a server's JSON as its README gives it, such as {\"mcpServers\": {\"NAME\": {\"command\": \"...\", \"args\": [...]}}}")
		}
		return exitFail
	}
	if len(im.Names) == 0 {
		fmt.Fprintf(c.stderr, "mcphost import: %s: no server could be imported\n", pin.Visible(name))
		for _, n := range im.Notes {
			fmt.Fprintf(c.stderr, "  %s\n", pin.Visible(n))
		}
		return exitFail
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by mcphost import from %s (%s).\n", pin.Visible(name), im.Format)
	b.WriteString("# Review each table before you use it: a server gets no network, and sees no\n")
	b.WriteString("# file outside the worktree, unless its table grants it.\n")
	for _, n := range im.Notes {
		// One line each (Import promises it, Visible makes sure), so
		// nothing in a note can end the comment.
		fmt.Fprintf(&b, "# note: %s\n", pin.Visible(n))
	}
	b.WriteString("\n")
	b.WriteString(im.TOML)
	if _, err := io.WriteString(c.stdout, b.String()); err != nil {
		fmt.Fprintf(c.stderr, "mcphost import: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(c.stderr, "mcphost import: %d table(s): %s. Append them to your config, review them, see what they offer with 'mcphost list', and record your review with 'mcphost approve %s'\n",
		len(im.Names), strings.Join(im.Names, ", "), strings.Join(im.Names, " "))
	return exitOK
}
