package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/schema"
)

// Elicitor asks a person what a server asked for (elicitation/create, form
// mode). It is called from a goroutine of the session, possibly for many
// requests at once; ctx ends when the server gives up, the call it came
// with ends, or the server's call_timeout passes. Its answer is checked
// against the requested schema before anything is sent: an answer that
// does not fit is refused (the server gets an error, not the content),
// and an error from the Elicitor is sent as an error too.
type Elicitor func(ctx context.Context, req ElicitRequest) (ElicitAnswer, error)

// ElicitRequest is what a server asks a person.
type ElicitRequest struct {
	// Server is the name of the server that asks.
	Server string
	// Message is the server's question with every invisible or control
	// character made visible (pin.Visible): safe to print as it is.
	Message string
	// Schema is the requested schema (a flat object of primitive
	// properties) with every string in it, names and descriptions alike,
	// made visible the same way: safe to print. Property names are plain
	// (a request whose names pin.Visible would change is refused before
	// it gets here), so they are the keys the answer uses.
	Schema json.RawMessage
	// Fields are the schema's properties in a form to ask for one by one,
	// sorted by name.
	Fields []ElicitField

	check *schema.Closed
}

// ElicitField is one property of a requested schema; its texts are made
// visible like ElicitRequest.Message.
type ElicitField struct {
	Name        string   // the key of the answer
	Title       string   // "" if none
	Description string   // "" if none
	Type        string   // "string", "number", "integer", "boolean" or "array" (choose several of Enum)
	Enum        []string // the allowed values of a string, or of an array's items, if listed
	Required    bool
	// Default is the schema's default for the field, to pre-fill: a
	// string (made visible, as Title is), a float64, a bool or a []string
	// of choices; nil when there is none, or when it does not fit the
	// field (a server's default is checked like an answer would be).
	Default any
}

// Check reports whether content fits the requested schema: nil, or an
// error wrapping ErrBadElicitation that says what does not fit. An
// Elicitor may use it to ask again.
func (r ElicitRequest) Check(content map[string]any) error {
	if r.check == nil {
		return fmt.Errorf("%w: the request has no schema to check against", ErrBadElicitation)
	}
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadElicitation, err)
	}
	if err := r.check.Check(b); err != nil {
		return fmt.Errorf("%w: %w", ErrBadElicitation, err)
	}
	return nil
}

// ElicitAction is a person's answer to an elicitation.
type ElicitAction string

const (
	// ElicitDecline: the person said no. The zero value of ElicitAnswer
	// declines (its Action "" is sent as "decline").
	ElicitDecline ElicitAction = "decline"
	// ElicitAccept: the person answered with ElicitAnswer.Content.
	ElicitAccept ElicitAction = "accept"
	// ElicitCancel: the person dismissed the question without choosing.
	ElicitCancel ElicitAction = "cancel"
)

// ElicitAnswer is an Elicitor's answer. Content is sent only with
// ElicitAccept, and only if it fits the requested schema.
type ElicitAnswer struct {
	Action  ElicitAction
	Content map[string]any
}

// ErrBadElicitation is the error a server gets for an elicitation mcphost
// will not show a person (a schema that cannot be checked or shown
// faithfully), or for an answer that does not fit its schema.
var ErrBadElicitation = errors.New("mcphost: elicitation refused")

// elicit is the go-sdk's ElicitationHandler for srv.
func (srv *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	s := srv.sess
	decline := &mcp.ElicitResult{Action: string(ElicitDecline)}
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no params"}
	}
	if srv.inflight.Load() == 0 && !s.opts.ElicitOutsideCalls {
		s.logger.Warn("elicitation declined: no call of the server's tools is in flight", "server", srv.cfg.Name)
		return decline, nil
	}
	if req.Params.Mode == "url" {
		return srv.elicitURL(ctx, req.Params)
	}
	if s.opts.Elicit == nil {
		// Only URL mode is advertised: the go-sdk's own answer.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support form elicitation"}
	}
	er, err := newElicitRequest(srv.cfg.Name, req.Params)
	if err != nil {
		s.addNotice(fmt.Sprintf("server %s asked the person something mcphost refused to show: %v", srv.cfg.Name, err))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	defer cancel()
	ans, err := s.opts.Elicit(ctx, er)
	if err != nil {
		return nil, fmt.Errorf("mcphost: the elicitation was not answered: %w", err)
	}
	switch ans.Action {
	case "", ElicitDecline:
		return decline, nil
	case ElicitCancel:
		return &mcp.ElicitResult{Action: string(ElicitCancel)}, nil
	case ElicitAccept:
	default:
		return nil, fmt.Errorf("%w: the elicitor answered with action %q", ErrBadElicitation, printable(string(ans.Action), 40))
	}
	if ans.Content == nil {
		ans.Content = map[string]any{}
	}
	if err := er.Check(ans.Content); err != nil {
		s.logger.Warn("elicitation answer refused", "server", srv.cfg.Name, "error", err)
		// The reason names the person's value: it stays on the host.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcphost refused the answer: it does not fit the requested schema"}
	}
	return &mcp.ElicitResult{Action: string(ElicitAccept), Content: ans.Content}, nil
}

// newElicitRequest checks a server's form elicitation and makes what the
// Elicitor sees of it.
func newElicitRequest(server string, p *mcp.ElicitParams) (ElicitRequest, error) {
	er := ElicitRequest{Server: server, Message: pin.Visible(p.Message)}
	if p.Mode != "" && p.Mode != "form" {
		return er, fmt.Errorf("%w: mode %q: mcphost asks only in form mode", ErrBadElicitation, printable(p.Mode, 40))
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil || p.RequestedSchema == nil {
		raw = []byte(`{"type":"object","properties":{}}`)
	}
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &sch); err != nil || sch.Type != "object" {
		return er, fmt.Errorf("%w: the requested schema is not an object schema", ErrBadElicitation)
	}
	for name, prop := range sch.Properties {
		if pin.Visible(name) != name || name == "" {
			return er, fmt.Errorf("%w: property name %s has characters a person cannot see or that are not plain", ErrBadElicitation, printable(pin.Visible(name), 80))
		}
		type choice struct {
			Const any `json:"const"`
		}
		var f struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []any    `json:"enum"`
			OneOf       []choice `json:"oneOf"`
			Default     any      `json:"default"`
			Items       *struct {
				Enum  []any    `json:"enum"`
				AnyOf []choice `json:"anyOf"`
			} `json:"items"`
		}
		if err := json.Unmarshal(prop, &f); err != nil {
			return er, fmt.Errorf("%w: property %s: %v", ErrBadElicitation, name, err)
		}
		values := append([]any(nil), f.Enum...)
		for _, c := range f.OneOf {
			values = append(values, c.Const)
		}
		switch f.Type {
		case "string", "number", "integer", "boolean":
		case "array":
			// A multiple choice: the one array the spec allows, of
			// strings listed in items.
			if f.Items == nil || len(f.Items.Enum)+len(f.Items.AnyOf) == 0 {
				return er, fmt.Errorf("%w: property %s is an array without a list of choices", ErrBadElicitation, name)
			}
			values = append(values, f.Items.Enum...)
			for _, c := range f.Items.AnyOf {
				values = append(values, c.Const)
			}
		default:
			return er, fmt.Errorf("%w: property %s has type %q, not a primitive type", ErrBadElicitation, name, printable(f.Type, 40))
		}
		field := ElicitField{Name: name, Title: pin.Visible(f.Title), Description: pin.Visible(f.Description),
			Type: f.Type, Required: slices.Contains(sch.Required, name)}
		for _, v := range values {
			str, ok := v.(string)
			if !ok || pin.Visible(str) != str {
				// The person would pick a text the server did not list.
				return er, fmt.Errorf("%w: property %s lists a choice that is not plain text", ErrBadElicitation, name)
			}
			field.Enum = append(field.Enum, str)
		}
		field.Default = elicitDefault(f.Type, f.Default, field.Enum)
		er.Fields = append(er.Fields, field)
	}
	slices.SortFunc(er.Fields, func(a, b ElicitField) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	closed, err := schema.Close(raw)
	if err != nil {
		return er, fmt.Errorf("%w: the requested schema cannot be checked: %v", ErrBadElicitation, err)
	}
	if closed.CheckProblem != "" {
		return er, fmt.Errorf("%w: the requested schema cannot be checked: %s", ErrBadElicitation, closed.CheckProblem)
	}
	er.check = closed
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return er, fmt.Errorf("%w: %v", ErrBadElicitation, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<U+200B>" stays readable
	if err := enc.Encode(visibleTree(tree)); err != nil {
		return er, fmt.Errorf("%w: %v", ErrBadElicitation, err)
	}
	er.Schema = bytes.TrimSpace(b.Bytes())
	return er, nil
}

// visibleTree applies pin.Visible to every string of a decoded JSON value,
// object keys included.
func visibleTree(v any) any {
	switch v := v.(type) {
	case string:
		return pin.Visible(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = visibleTree(x)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[pin.Visible(k)] = visibleTree(x)
		}
		return out
	}
	return v
}

// NewElicitRequest makes the ElicitRequest an Elicitor would get for a
// server's form elicitation with this message and requested schema (an
// Elicitor's tests use it). Its error wraps ErrBadElicitation for a
// request mcphost refuses to show.
func NewElicitRequest(server, message string, requestedSchema json.RawMessage) (ElicitRequest, error) {
	var sch any
	if requestedSchema != nil {
		sch = requestedSchema
	}
	return newElicitRequest(server, &mcp.ElicitParams{Message: message, RequestedSchema: sch})
}

// elicitDefault is a field's default as ElicitField.Default gives it: of
// the field's type (and among its choices, if it lists any), nil otherwise.
func elicitDefault(typ string, v any, choices []string) any {
	switch d := v.(type) {
	case string:
		if typ == "string" && (len(choices) == 0 || slices.Contains(choices, d)) {
			return pin.Visible(d)
		}
	case float64:
		if typ == "number" || typ == "integer" && d == float64(int64(d)) {
			return d
		}
	case bool:
		if typ == "boolean" {
			return d
		}
	case []any:
		if typ != "array" {
			return nil
		}
		out := []string{}
		for _, e := range d {
			s, ok := e.(string)
			if !ok || !slices.Contains(choices, s) {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// URLElicitor asks a person whether to open a URL a server names
// (elicitation/create in URL mode: a sign-in, a payment, anything the
// server must not see through the client). mcphost never opens it: the
// person does, outside the agent, or not. It is called as an Elicitor is
// (same goroutines, same bounds: only while a call of the server's tools
// is in flight unless Options.ElicitOutsideCalls, at most the server's
// call_timeout). Its answer is the person's: ElicitAccept (they agreed to
// open it), ElicitDecline or ElicitCancel; "" declines, and an error is
// sent to the server as an error.
type URLElicitor func(ctx context.Context, req ElicitURLRequest) (ElicitAction, error)

// ElicitURLRequest is a server's request that a person open a URL. Every
// text is made visible (pin.Visible) and so safe to print as it is.
type ElicitURLRequest struct {
	// Server is the name of the server that asks.
	Server string
	// Message is the server's reason, made visible.
	Message string
	// URL is the URL as the server sent it, made visible.
	URL string
	// Host is where the URL leads, to show apart from it: the URL's host
	// (and port) in ASCII, every other character written <U+XXXX>, so a
	// look-alike letter of another script is visible, and user info
	// before an "@" is not mistaken for it.
	Host string
}

// elicitURL answers a URL-mode elicitation through Options.ElicitURL, or
// declines it when the agent has none. The URL must be http or https
// with a host; any other is refused with a notice.
func (srv *server) elicitURL(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	s := srv.sess
	decline := &mcp.ElicitResult{Action: string(ElicitDecline)}
	if s.opts.ElicitURL == nil {
		s.logger.Warn("URL elicitation declined: the agent has no ElicitURL", "server", srv.cfg.Name)
		return decline, nil
	}
	er, err := newElicitURLRequest(srv.cfg.Name, p)
	if err != nil {
		s.addNotice(fmt.Sprintf("server %s asked the person to open a URL mcphost refused to show: %v", srv.cfg.Name, err))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	defer cancel()
	action, err := s.opts.ElicitURL(ctx, er)
	if err != nil {
		return nil, fmt.Errorf("mcphost: the elicitation was not answered: %w", err)
	}
	switch action {
	case "", ElicitDecline:
		return decline, nil
	case ElicitAccept, ElicitCancel:
		return &mcp.ElicitResult{Action: string(action)}, nil
	}
	return nil, fmt.Errorf("%w: the URL elicitor answered with action %q", ErrBadElicitation, printable(string(action), 40))
}

// maxElicitURL bounds the URL a server may ask a person to open, and
// maxElicitURLMessage the message shown with it.
const (
	maxElicitURL        = 8 << 10
	maxElicitURLMessage = 4 << 10
)

// newElicitURLRequest checks a server's URL-mode elicitation and makes
// what the URLElicitor sees of it.
func newElicitURLRequest(server string, p *mcp.ElicitParams) (ElicitURLRequest, error) {
	er := ElicitURLRequest{Server: server, Message: pin.Visible(p.Message), URL: pin.Visible(p.URL)}
	if len(p.URL) > maxElicitURL {
		return er, fmt.Errorf("%w: the URL is longer than %d bytes", ErrBadElicitation, maxElicitURL)
	}
	if len(p.Message) > maxElicitURLMessage {
		return er, fmt.Errorf("%w: the message is longer than %d bytes", ErrBadElicitation, maxElicitURLMessage)
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return er, fmt.Errorf("%w: %s is not an http or https URL with a host", ErrBadElicitation, printable(p.URL, 200))
	}
	if u.User != nil {
		// https://bank.example:x@evil.example/ reads as the bank's.
		return er, fmt.Errorf("%w: %s names a user before its host, which reads as another host", ErrBadElicitation, printable(p.URL, 200))
	}
	var b strings.Builder
	for _, r := range u.Host {
		if r > 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
	}
	er.Host = b.String()
	return er, nil
}

// NewElicitURLRequest makes the ElicitURLRequest a URLElicitor would get
// for a server's URL-mode elicitation (a URLElicitor's tests use it). Its
// error wraps ErrBadElicitation for a URL mcphost refuses to show.
func NewElicitURLRequest(server, message, rawURL string) (ElicitURLRequest, error) {
	return newElicitURLRequest(server, &mcp.ElicitParams{Mode: "url", Message: message, URL: rawURL})
}
