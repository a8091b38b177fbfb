package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTap sees the raw bytes of every tools/list result on one connection.
//
// The go-sdk decodes tools into typed structs, which drops unknown fields,
// takes the last of duplicate keys and turns numbers into float64. What the
// person reviews and what the digest covers must be what the server sent, so
// mcphost takes tool definitions from these raw results instead.
//
// It also sees notifications/tools/list_changed in stream order, before any
// response that follows it on the wire, so the server can be marked as
// re-listing before a call that the server answered after changing its tools
// returns. (The go-sdk runs notification handlers asynchronously.)
type listTap struct {
	changed func()      // called on notifications/tools/list_changed
	broken  func(error) // called when reading the connection fails

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	last    json.RawMessage
}

func newListTap(changed func(), broken func(error)) *listTap {
	return &listTap{pending: map[jsonrpc.ID]bool{}, changed: changed, broken: broken}
}

// take returns the raw result of the most recent tools/list response and
// forgets it. Discovery is serialized per server, so the most recent response
// is the one its ListTools call just returned.
func (t *listTap) take() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.last
	t.last = nil
	return r
}

// tapTransport wraps a transport so that its connection feeds a listTap.
type tapTransport struct {
	inner mcp.Transport
	tap   *listTap
}

func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap}, nil
}

type tapConn struct {
	mcp.Connection
	tap *listTap
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.ID.IsValid() {
		c.tap.mu.Lock()
		c.tap.pending[req.ID] = true
		c.tap.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrClosed) {
		// The server sent what cannot be read (garbage, a message over
		// the size limit): the go-sdk closes the connection; say why.
		c.tap.broken(err)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "notifications/tools/list_changed" {
		c.tap.changed()
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.tap.mu.Lock()
		if c.tap.pending[resp.ID] {
			delete(c.tap.pending, resp.ID)
			if resp.Error == nil {
				// Copy: the transport may reuse its buffer.
				c.tap.last = append(json.RawMessage(nil), resp.Result...)
			}
		}
		c.tap.mu.Unlock()
	}
	return msg, err
}
