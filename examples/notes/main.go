// Command notes is a small MCP server for mcphost's examples: it keeps notes
// in notes.json in its working directory (the worktree mcphost gives it).
//
// Build it and list what an agent would see:
//
//	go build -trimpath -o bin/ ./examples/notes
//	go run ./cmd/mcphost list -config examples/mcphost.toml
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const file = "notes.json"

// Note is one note.
type Note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// store reads and writes notes.json; mu serializes the tools.
type store struct{ mu sync.Mutex }

func (s *store) load() ([]Note, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var notes []Note
	return notes, json.Unmarshal(b, &notes)
}

func (s *store) save(notes []Note) error {
	b, err := json.MarshalIndent(notes, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

type listIn struct {
	Query string `json:"query,omitempty" jsonschema:"only notes containing this text"`
}

type addIn struct {
	Text string `json:"text" jsonschema:"the note's text"`
}

type deleteIn struct {
	ID string `json:"id" jsonschema:"the id of the note to delete"`
}

type listOut struct {
	Notes []Note `json:"notes"`
}

func main() {
	var st store
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_notes", Description: "List the notes, optionally only those containing a text.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			notes, err := st.load()
			if err != nil {
				return nil, listOut{}, err
			}
			out := listOut{Notes: []Note{}}
			for _, n := range notes {
				if strings.Contains(n.Text, in.Query) {
					out.Notes = append(out.Notes, n)
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Add a note."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, Note, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			notes, err := st.load()
			if err != nil {
				return nil, Note{}, err
			}
			n := Note{ID: strconv.Itoa(len(notes) + 1), Text: in.Text}
			for slices.ContainsFunc(notes, func(o Note) bool { return o.ID == n.ID }) {
				n.ID += "+"
			}
			return nil, n, st.save(append(notes, n))
		})
	mcp.AddTool(s, &mcp.Tool{Name: "delete_note", Description: "Delete a note by id.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			notes, err := st.load()
			if err != nil {
				return nil, nil, err
			}
			i := slices.IndexFunc(notes, func(n Note) bool { return n.ID == in.ID })
			if i < 0 {
				return nil, nil, fmt.Errorf("no note with id %q", in.ID)
			}
			return nil, nil, st.save(slices.Delete(notes, i, i+1))
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
