package mcphost

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// methodOf is a request's method, or "response".
func methodOf(msg jsonrpc.Message) string {
	if req, ok := msg.(*jsonrpc.Request); ok {
		return req.Method
	}
	return "response"
}

func TestStdoutReader(t *testing.T) {
	const limit = 64
	tests := []struct {
		name    string
		in      string
		methods []string // the requests read, in order
		strays  []string // the stray lines seen, in order
		err     string   // the final error, "" for io.EOF
	}{
		{"messages", `{"jsonrpc":"2.0","method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"b"}` + "\r\n", []string{"a", "b"}, nil, ""},
		{"noise between", "Warning: x\n" + `{"jsonrpc":"2.0","method":"a"}` + "\n\n  \n{\"level\":30}\n[1,2]\n" + `{"jsonrpc":"2.0","method":"b"}`, []string{"a", "b"}, []string{"Warning: x", `{"level":30}`, "[1,2]"}, ""},
		{"a last line without newline", `{"jsonrpc":"2.0","method":"a"}`, []string{"a"}, nil, ""},
		{"a message over the limit", `{"jsonrpc":"2.0","method":"` + strings.Repeat("a", 100) + `"}` + "\n", nil, nil, "more than 64 bytes"},
		{"text over the limit is stray", strings.Repeat("x", 100) + "\n" + `{"jsonrpc":"2.0","method":"a"}` + "\n", []string{"a"}, []string{strings.Repeat("x", 100)}, ""},
		{"a flood of stray lines", strings.Repeat("x\n", maxStrayLines+1), nil, nil, "more than the 1000 lines"},
		{"stray lines broken by messages", strings.Repeat(strings.Repeat("x\n", maxStrayLines)+`{"jsonrpc":"2.0","method":"a"}`+"\n", 2), []string{"a", "a"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var strays []string
			r := newStdoutReader(strings.NewReader(tt.in), limit, func(start []byte, n, _ int) {
				if n < 200 {
					strays = append(strays, string(start))
				}
			})
			var methods []string
			var err error
			for {
				var msg jsonrpc.Message
				msg, err = r.read()
				if err != nil {
					break
				}
				methods = append(methods, methodOf(msg))
			}
			if tt.err == "" && !errors.Is(err, io.EOF) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
			if strings.Join(methods, ",") != strings.Join(tt.methods, ",") {
				t.Errorf("methods %q, want %q", methods, tt.methods)
			}
			if tt.strays != nil && strings.Join(strays, "|") != strings.Join(tt.strays, "|") {
				t.Errorf("strays %q, want %q", strays, tt.strays)
			}
		})
	}
}

// FuzzStdout: any stdout a server writes gives messages that re-encode, and
// stray lines no longer than what was written; nothing panics or grows
// without bound.
func FuzzStdout(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"a"}` + "\nWarning\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`))
	f.Add([]byte("[{\"jsonrpc\":\"2.0\"}]\n{\n}\n\x00\xff\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		total := 0
		r := newStdoutReader(bytes.NewReader(in), 256, func(start []byte, n, _ int) {
			if len(start) > n || len(start) > 4<<10+257 {
				t.Fatalf("stray start of %d bytes for a line of %d", len(start), n)
			}
			total += n
		})
		for {
			msg, err := r.read()
			if err != nil {
				break
			}
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				t.Fatalf("a message read does not encode: %v", err)
			}
		}
		if total > len(in) {
			t.Fatalf("strays of %d bytes from %d bytes of input", total, len(in))
		}
	})
}
