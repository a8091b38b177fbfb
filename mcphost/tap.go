package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on one server's connection. A server past one is stopped, with a
// notice that says which bound it broke.
const (
	// writeTimeout bounds one message mcphost writes to a server that has
	// no earlier deadline (a call's deadline is call_timeout): a server
	// that does not take it in this time is not reading its stdin.
	writeTimeout = 10 * time.Second
	// maxServerRequests bounds the requests from a server (ping,
	// roots/list...) that mcphost has read and not yet answered.
	maxServerRequests = 16
	// maxServerMessage bounds the params of one request or notification
	// from a server. Responses are bounded by lineLimit instead: a tool's
	// result may be large, what a server asks of the host may not.
	maxServerMessage = 256 << 10
)

// emptyLists is, for each list method whose results the tap takes, the
// result the go-sdk gets in their place (see listTap).
var emptyLists = map[string]json.RawMessage{
	"tools/list":   json.RawMessage(`{"tools":[]}`),
	"prompts/list": json.RawMessage(`{"prompts":[]}`),
}

// errStopped is what a connection mcphost stopped returns to the go-sdk.
var errStopped = errors.New("mcphost stopped the server")

// listTap sees the raw bytes of every tools/list and prompts/list result on
// one connection (listing is serialized per server, by server.listMu).
//
// The go-sdk decodes tools into typed structs, which drops unknown fields,
// takes the last of duplicate keys and turns numbers into float64. What the
// person reviews and what the digest covers must be what the server sent, so
// mcphost takes tool definitions from these raw results instead.
//
// It also sees notifications/tools/list_changed (and prompts/list_changed)
// in stream order, before any response that follows it on the wire, so the
// server can be marked as re-listing before a call that the server answered
// after changing its tools returns. (The go-sdk runs notification handlers
// asynchronously.)
//
// The go-sdk is handed an empty list in place of each result the tap takes
// (emptyLists): mcphost never uses the go-sdk's decoding of it, which on
// the fixture's 23 tools was about half of what a start allocated (1.28 MB
// before, 0.66 MB after: its check of each schema's header annotations
// marshals and unmarshals every schema again), and, with no ttlMs, the
// go-sdk's cache never answers a later listing off the wire, where the tap
// would not see it. (The go-sdk registers a call before Write marks it
// pending, and its IDs are predictable: a server that answers a listing
// before it was asked gets its answer decoded, and cached, by the go-sdk,
// and the listing fails as not seen on the wire. Only that server's own
// listing suffers.)
type listTap struct {
	changed func()      // called on notifications/tools/list_changed
	broken  func(error) // called when reading the connection fails
	stop    func(error) // called when the server breaks a bound: stop it
	// promptsChanged and resourcesChanged, if set, are called on
	// notifications/prompts/list_changed and
	// notifications/resources/list_changed, in stream order too.
	promptsChanged, resourcesChanged func()
	// progress, if set, is called with the params of each
	// notifications/progress, in stream order: before the response of
	// the call it is about (the go-sdk's handlers run asynchronously, so
	// a call could return, and forget its token, before its last
	// notification was handled).
	progress func(params json.RawMessage)
	// stray, if set, is called for each line of stdout that is not
	// JSON-RPC, as stdoutReader.stray is.
	stray func(start []byte, n, row int)

	mu sync.Mutex
	// pending holds the IDs of the list requests in flight, each with
	// what the go-sdk gets in place of its result.
	pending map[jsonrpc.ID]json.RawMessage
	last    json.RawMessage
	conn    *tapConn // the connection, once connected
}

func newListTap(changed func(), broken, stop func(error)) *listTap {
	return &listTap{pending: map[jsonrpc.ID]json.RawMessage{}, changed: changed, broken: broken, stop: stop}
}

// take returns the raw result of the most recent tools/list or
// prompts/list response and forgets it. Discovery is serialized per
// server, so the most recent response is the one its ListTools (or
// ListPrompts) call just returned.
func (t *listTap) take() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.last
	t.last = nil
	return r
}

// deadlineWriter is a server's stdin: a pipe whose writes can be given a
// deadline.
type deadlineWriter interface {
	io.WriteCloser
	SetWriteDeadline(time.Time) error
}

// stdinWriter is the writer the go-sdk's transport writes through. It
// remembers how much of the last message the server took, so that a write
// cut short can be told from one that never began.
type stdinWriter struct {
	f    deadlineWriter
	n    int // bytes written by the last Write, -1 if none was made
	want int // the length of the last Write's message
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	w.want = len(p)
	n, err := w.f.Write(p)
	w.n = n
	return n, err
}

func (w *stdinWriter) Close() error { return w.f.Close() }

// tapTransport wraps the stdio transport to a server so that its
// connection feeds a listTap and keeps the connection's bounds.
type tapTransport struct {
	stdin  *stdinWriter
	stdout io.ReadCloser
	limit  int // lineLimit
	tap    *listTap
}

func newTapTransport(stdin io.WriteCloser, stdout io.ReadCloser, limit int, tap *listTap) (*tapTransport, error) {
	f, ok := stdin.(deadlineWriter)
	if !ok {
		return nil, fmt.Errorf("the server's stdin (%T) cannot bound its writes", stdin)
	}
	return &tapTransport{stdin: &stdinWriter{f: f, n: -1}, stdout: stdout, limit: limit, tap: tap}, nil
}

// Connect returns the connection. Its writes go through the go-sdk's stdio
// transport; its reads do not: the go-sdk's reader ends the connection at
// the first line that is not JSON, and real servers print such lines. The
// connection reads with a stdoutReader instead, and the go-sdk's transport
// is given a reader that yields nothing until it is closed.
func (t *tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	idle, idleW := io.Pipe()
	inner := &mcp.IOTransport{Reader: idle, Writer: t.stdin, MaxLineLength: t.limit}
	c, err := inner.Connect(ctx)
	if err != nil {
		idleW.Close()
		return nil, err
	}
	stray := t.tap.stray
	if stray == nil {
		stray = func([]byte, int, int) {}
	}
	tc := &tapConn{Connection: c, tap: t.tap, stdin: t.stdin, wsem: make(chan struct{}, 1),
		cancelled: make(chan struct{}, 1), inflight: map[jsonrpc.ID]bool{}, stdout: t.stdout, idle: idleW,
		incoming: make(chan readResult), closed: make(chan struct{}), side: map[string]chan *jsonrpc.Response{}}
	t.tap.mu.Lock()
	t.tap.conn = tc
	t.tap.mu.Unlock()
	go tc.readLoop(newStdoutReader(t.stdout, t.limit, stray))
	return tc, nil
}

// readResult is one message read from the server, or why there is none.
type readResult struct {
	msg jsonrpc.Message
	err error
}

// readLoop reads the server's messages until an error, handing each to
// Read. It ends when the connection is closed (Close closes stdout, which
// ends a blocked read).
func (c *tapConn) readLoop(r *stdoutReader) {
	for {
		msg, err := r.read()
		select {
		case c.incoming <- readResult{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// Close closes the go-sdk's transport (the server's stdin), and the
// server's stdout, which ends the read loop.
func (c *tapConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.Connection.Close()
		c.idle.Close()
		c.stdout.Close()
	})
	return err
}

type tapConn struct {
	mcp.Connection
	tap   *listTap
	stdin *stdinWriter
	wsem  chan struct{} // one writer at a time, waited for under its context
	// cancelled gets a value when cancelWrite has run (buffered, 1).
	cancelled chan struct{}

	stdout    io.Closer
	idle      *io.PipeWriter // the go-sdk transport's reader's other end
	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
	readErr   error // the error that ended reading; then every Read returns it

	mu         sync.Mutex
	inflight   map[jsonrpc.ID]bool // requests from the server not yet answered
	stopped    bool
	sideSeq    uint64
	side       map[string]chan *jsonrpc.Response // mcphost's own requests in flight, by ID
	sideClosed bool                              // reading ended: no side answer will come
}

// next returns the next message of the read loop. Reads are serialized by
// the go-sdk.
func (c *tapConn) next(ctx context.Context) (jsonrpc.Message, error) {
	if c.readErr != nil {
		return nil, c.readErr
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		if r.err != nil {
			c.readErr = r.err
		}
		return r.msg, r.err
	}
}

// sidePrefix starts the IDs of the requests mcphost makes itself, beside
// the go-sdk's (which are numbers): the methods the go-sdk does not speak
// (tasks). Their responses are taken off the stream before the go-sdk
// sees them.
const sidePrefix = "mcphost-"

// request sends a request the go-sdk does not speak and waits, no longer
// than ctx, for its result. A JSON-RPC error is returned as an error.
func (c *tapConn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.sideClosed {
		c.mu.Unlock()
		return nil, mcp.ErrConnectionClosed
	}
	c.sideSeq++
	key := sidePrefix + strconv.FormatUint(c.sideSeq, 10)
	ch := make(chan *jsonrpc.Response, 1)
	c.side[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.side, key)
		c.mu.Unlock()
	}()
	id, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	if err := c.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok || resp == nil {
			return nil, mcp.ErrConnectionClosed
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, fromServer(resp.Error))
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// takeSide delivers a response to one of mcphost's own requests and
// reports whether it was one.
func (c *tapConn) takeSide(resp *jsonrpc.Response) bool {
	key, ok := resp.ID.Raw().(string)
	if !ok || !strings.HasPrefix(key, sidePrefix) {
		return false
	}
	c.mu.Lock()
	ch := c.side[key]
	c.mu.Unlock()
	if ch != nil {
		// Copy: the transport may reuse its buffer.
		r := *resp
		r.Result = append(json.RawMessage(nil), resp.Result...)
		select {
		case ch <- &r:
		default: // a second answer with the same ID: the first stands
		}
	}
	return true // an answer to a request given up on is dropped too
}

// endSide fails mcphost's own requests in flight: reading has ended.
func (c *tapConn) endSide() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sideClosed {
		return
	}
	c.sideClosed = true
	for _, ch := range c.side {
		close(ch)
	}
	c.side = map[string]chan *jsonrpc.Response{}
}

// cancelWrite ends the write in progress at once: its caller gave up.
func (c *tapConn) cancelWrite() {
	c.stdin.f.SetWriteDeadline(time.Unix(1, 0))
	c.cancelled <- struct{}{}
}

// halt stops the server for err, once.
func (c *tapConn) halt(err error) {
	c.mu.Lock()
	first := !c.stopped
	c.stopped = true
	c.mu.Unlock()
	if first {
		c.tap.stop(err)
	}
}

// Write writes one message, bounded by ctx and by writeTimeout. The go-sdk
// writes synchronously and a pipe write ignores contexts, so the bound is a
// deadline on the pipe, moved to now if ctx is cancelled. A message cut
// short leaves the stream unreadable, and a server that did not take its
// input in time is not reading: either way the server is stopped. Only a
// message the caller gave up on before any of it was written leaves the
// server be.
func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if empty := emptyLists[req.Method]; empty != nil {
			c.tap.mu.Lock()
			c.tap.pending[req.ID] = empty
			c.tap.mu.Unlock()
		}
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		defer func() {
			c.mu.Lock()
			delete(c.inflight, resp.ID)
			c.mu.Unlock()
		}()
	}
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.wsem }()

	deadline, byCtx := time.Now().Add(writeTimeout), false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, byCtx = d, true
	}
	f := c.stdin.f
	if err := f.SetWriteDeadline(deadline); err != nil {
		return err // the pipe is closed: the server is being stopped
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.cancelWrite)
	}
	c.stdin.n = -1
	err := c.Connection.Write(ctx, msg)
	if stop != nil && !stop() {
		<-c.cancelled // its deadline must not fall on the next write
	}
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	taken, want := max(c.stdin.n, 0), c.stdin.want
	if byCtx && !time.Now().Before(deadline) {
		<-ctx.Done() // the pipe's deadline was the context's: it ends now
	}
	switch cerr := ctx.Err(); {
	case cerr != nil && taken == 0 && !errors.Is(cerr, context.DeadlineExceeded):
		return cerr // nothing was sent: the server may be well
	case cerr != nil && !errors.Is(cerr, context.DeadlineExceeded):
		c.halt(fmt.Errorf("a message to it was cut short when its caller gave up (%d of %d bytes taken), and the stream cannot go on", taken, want))
		return cerr
	case cerr != nil:
		c.halt(fmt.Errorf("it did not take its input: a message of %d bytes (%d taken) was not written by the call's deadline; it is not reading its stdin", want, taken))
		return cerr
	}
	c.halt(fmt.Errorf("it did not take its input: a message of %d bytes (%d taken) was not written within %v; it is not reading its stdin", want, taken, writeTimeout))
	return err
}

// Read reads one message and keeps the bounds on what a server sends: the
// size of a request or notification, and the requests in flight.
func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.read(ctx)
		if err != nil {
			c.endSide()
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && c.takeSide(resp) {
			continue
		}
		return msg, nil
	}
}

func (c *tapConn) read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.next(ctx)
	if errors.Is(err, errStrayFlood) {
		c.halt(err)
		return nil, fmt.Errorf("%w: %w", errStopped, err)
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrClosed) {
		// The server sent what cannot be read (garbage, a message over
		// the size limit): the go-sdk closes the connection; say why.
		c.tap.broken(err)
	}
	if err != nil {
		return msg, err
	}
	switch msg := msg.(type) {
	case *jsonrpc.Request:
		if len(msg.Params) > maxServerMessage {
			err := fmt.Errorf("it sent a %s message of %d bytes, more than the %d mcphost takes from a server", printable(msg.Method, 60), len(msg.Params), maxServerMessage)
			c.halt(err)
			return nil, fmt.Errorf("%w: %w", errStopped, err)
		}
		if msg.ID.IsValid() {
			c.mu.Lock()
			c.inflight[msg.ID] = true
			n := len(c.inflight)
			c.mu.Unlock()
			if n > maxServerRequests {
				err := fmt.Errorf("it sent more than %d requests that mcphost had not yet answered (it is not reading the answers)", maxServerRequests)
				c.halt(err)
				return nil, fmt.Errorf("%w: %w", errStopped, err)
			}
		}
		switch msg.Method {
		case "notifications/tools/list_changed":
			c.tap.changed()
		case "notifications/prompts/list_changed":
			if c.tap.promptsChanged != nil {
				c.tap.promptsChanged()
			}
		case "notifications/resources/list_changed":
			if c.tap.resourcesChanged != nil {
				c.tap.resourcesChanged()
			}
		case "notifications/progress":
			if c.tap.progress != nil {
				c.tap.progress(msg.Params)
			}
		}
	case *jsonrpc.Response:
		c.tap.mu.Lock()
		if empty, ok := c.tap.pending[msg.ID]; ok {
			delete(c.tap.pending, msg.ID)
			if msg.Error == nil {
				// Copy: the transport may reuse its buffer.
				c.tap.last = append(json.RawMessage(nil), msg.Result...)
				msg.Result = empty
			}
		}
		c.tap.mu.Unlock()
	}
	return msg, nil
}
