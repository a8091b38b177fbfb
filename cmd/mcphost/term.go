package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// writeJSON writes v as indented JSON in which no character that could drive
// a terminal or hide from a reader appears raw: encoding/json already writes
// C0 controls as \u00XX escapes, and pin.EscapeJSON escapes the rest (DEL, C1
// controls such as U+009B, bidi controls such as U+202E, zero-width and
// other invisible characters). The JSON means exactly what it meant, so it
// stays valid and equal when piped to a program, and its bytes are safe on
// a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(pin.EscapeJSON(buf.Bytes()))
	return err
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(file.Fd()))
}

// progressPrinter writes a call's progress to w: on a terminal one line
// that each update rewrites, elsewhere a line per update. The server's
// message goes through pin.Visible and is kept to one line.
type progressPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	written  bool // an updating line is on the terminal
}

func (p *progressPrinter) print(pr mcphost.Progress) {
	line := fmt.Sprintf("progress %s: %g", pr.Tool, pr.Progress)
	if pr.Total > 0 {
		line += fmt.Sprintf("/%g", pr.Total)
	}
	if pr.Message != "" {
		line += " " + strings.ReplaceAll(pin.Visible(pr.Message), "\n", `\n`)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		if len(line) > 200 {
			line = line[:200] // Visible is ASCII-safe escapes and valid text; cut on a rune
			for !utf8.ValidString(line) {
				line = line[:len(line)-1]
			}
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.written = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends an updating line, so what follows starts on a line of its own.
func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written {
		fmt.Fprintln(p.w)
		p.written = false
	}
}

// elicitor answers servers' elicitations for `call`. A person answers on
// the terminal; when stdin is not one, every elicitation is declined at
// once (nobody could answer, and waiting would hang the call). One
// question is asked at a time.
type elicitor struct {
	in       *bufio.Reader
	out      io.Writer
	terminal bool
	before   func()        // ends an updating progress line
	turn     chan struct{} // held while a question is being asked (buffered, 1)
}

func newElicitor(in io.Reader, out io.Writer, terminal bool, before func()) *elicitor {
	return &elicitor{in: bufio.NewReader(in), out: out, terminal: terminal, before: before, turn: make(chan struct{}, 1)}
}

func (e *elicitor) elicit(ctx context.Context, req mcphost.ElicitRequest) (mcphost.ElicitAnswer, error) {
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return mcphost.ElicitAnswer{}, ctx.Err()
	}
	if e.before != nil {
		e.before()
	}
	if !e.terminal {
		<-e.turn
		fmt.Fprintf(e.out, "mcphost: server %s asked a question; declined, since stdin is not a terminal: %s\n", req.Server, req.Message)
		return mcphost.ElicitAnswer{Action: mcphost.ElicitDecline}, nil
	}
	// Reading the terminal does not end with ctx: answers are read in a
	// goroutine, and a question the server gave up on is cancelled.
	type result struct {
		ans mcphost.ElicitAnswer
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The turn is held until the person has answered, even if the
		// server gave up meanwhile: one reader of the terminal at a time.
		defer func() { <-e.turn }()
		ans, err := e.ask(req)
		done <- result{ans, err}
	}()
	select {
	case r := <-done:
		return r.ans, r.err
	case <-ctx.Done():
		fmt.Fprintln(e.out, "\nmcphost: the server stopped waiting for the answer")
		return mcphost.ElicitAnswer{}, ctx.Err()
	}
}

// ask asks the person req's question, field by field, and checks the
// answer against the schema before returning it; an answer that does not
// fit is asked for again, up to three times.
func (e *elicitor) ask(req mcphost.ElicitRequest) (mcphost.ElicitAnswer, error) {
	fmt.Fprintf(e.out, "server %s asks: %s\n", req.Server, req.Message)
	if !ask(e.in, e.out, "Answer it?") {
		return mcphost.ElicitAnswer{Action: mcphost.ElicitDecline}, nil
	}
	for try := 0; try < 3; try++ {
		content := map[string]any{}
		for _, f := range req.Fields {
			label := f.Name
			if f.Title != "" {
				label += " (" + f.Title + ")"
			}
			hint := f.Type
			switch {
			case f.Type == "array":
				hint = "some of " + strings.Join(f.Enum, ", ") + ", separated by commas"
			case len(f.Enum) > 0:
				hint = "one of " + strings.Join(f.Enum, ", ")
			}
			switch {
			case f.Default != nil:
				hint += fmt.Sprintf(", empty for %v", f.Default)
			case !f.Required:
				hint += ", empty to leave out"
			}
			if f.Description != "" {
				fmt.Fprintf(e.out, "  %s\n", f.Description)
			}
			fmt.Fprintf(e.out, "%s [%s]: ", label, hint)
			line, err := e.in.ReadString('\n')
			if err != nil && line == "" {
				fmt.Fprintln(e.out)
				return mcphost.ElicitAnswer{Action: mcphost.ElicitCancel}, nil
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" && f.Default != nil {
				content[f.Name] = defaultValue(f)
				continue
			}
			if line == "" && !f.Required {
				continue
			}
			content[f.Name] = elicitValue(f.Type, line)
		}
		if err := req.Check(content); err != nil {
			fmt.Fprintf(e.out, "that answer does not fit: %s\n", pin.Visible(err.Error()))
			continue
		}
		return mcphost.ElicitAnswer{Action: mcphost.ElicitAccept, Content: content}, nil
	}
	fmt.Fprintln(e.out, "no answer that fits; cancelled")
	return mcphost.ElicitAnswer{Action: mcphost.ElicitCancel}, nil
}

// elicitValue reads what a person typed as a value of the field's type;
// text that is not of the type stays text, for the schema check to refuse.
func elicitValue(typ, text string) any {
	switch typ {
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return true
		case "n", "no", "false":
			return false
		}
	case "integer":
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return f
		}
	case "array":
		var out []any
		for _, v := range strings.Split(text, ",") {
			out = append(out, strings.TrimSpace(v))
		}
		return out
	}
	return text
}

// defaultValue is a field's default as an answer.
func defaultValue(f mcphost.ElicitField) any {
	switch d := f.Default.(type) {
	case float64:
		if f.Type == "integer" {
			return int64(d)
		}
	case []string:
		out := make([]any, len(d))
		for i, s := range d {
			out[i] = s
		}
		return out
	}
	return f.Default
}
