// Package toolresult renders the result of an MCP tool call for a model
// provider's API.
//
// Render turns an *mcp.CallToolResult into a list of Parts, each a text or
// an image, that a provider package (openai, anthropic) maps one to one onto
// its own JSON. What differs between APIs is said by a Target: the name the
// placeholders use, whether the API takes images in a tool result, and
// whether it has an error flag of its own.
//
// The model reads what a tool server sent, so the rendering is strict about
// two things. Nothing is dropped silently: whatever an API cannot carry
// (audio, binary resources, images it does not take, content that is not
// valid in a tool result) is replaced by a bracketed placeholder that says
// what it was and why it is not shown, and a result with no content says so.
// And nothing the server labels is trusted where a mistake would fail the
// whole request: an image is passed on only when its bytes are PNG, JPEG,
// GIF or WebP, with the type its bytes show, and a server's MIME type is
// quoted in placeholders unless it looks like one, so that it cannot pass
// for the host's own words.
package toolresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Texts Render adds to what the model reads. They are bracketed so that the
// model can tell the host's notes from the tool's own output.
const (
	// ErrorNote starts an error result (isError) for a Target without an
	// error flag of its own.
	ErrorNote = "[the tool reported an error]"
	// NoContentNote stands for a result with nothing to show.
	NoContentNote = "[the tool returned no content]"
)

// callFailed starts the text ErrorText returns.
const callFailed = "The call failed: "

// Part is one piece of a tool result as the model will see it: Text, or
// (when Image is non-nil) an image the Target accepts. A Part with a nil
// Image always has non-empty Text.
type Part struct {
	Text  string
	Image *Image
}

// Image is an image whose bytes were checked to be of MediaType, one of
// "image/png", "image/jpeg", "image/gif" and "image/webp".
type Image struct {
	MediaType string
	Data      []byte
}

// Target describes what one API accepts in a tool result. Its zero value,
// but for Name, is the most cautious: text only, with ErrorNote marking an
// error result.
type Target struct {
	// Name is the API's name for a tool result, in the plural, as the
	// subject of placeholders ("Chat Completions tool messages carry only
	// text").
	Name string
	// Images reports whether the API accepts images in a tool result.
	// Without it every image becomes a placeholder.
	Images bool
	// ErrorFlag reports that the API marks an error result itself (such as
	// Anthropic's "is_error"), so Render does not start one with ErrorNote.
	// The caller must then set that flag from the result's IsError.
	ErrorFlag bool
}

// Render turns a tool result into parts for t, in the order of its content,
// with structured content last. It never returns an empty slice and never
// drops content without a placeholder saying so; only nil items and empty
// texts, which hold nothing to show, are skipped. A nil res is read as a
// result with no content.
func Render(res *mcp.CallToolResult, t Target) []Part {
	if res == nil {
		return []Part{{Text: NoContentNote}}
	}
	var parts []Part
	noted := res.IsError && !t.ErrorFlag
	if noted {
		parts = append(parts, Part{Text: ErrorNote})
	}
	var texts []string
	for _, c := range res.Content {
		p, ok := renderContent(c, t)
		if !ok {
			continue
		}
		if tc, isText := c.(*mcp.TextContent); isText {
			texts = append(texts, tc.Text)
		}
		parts = append(parts, p)
	}
	if res.StructuredContent != nil {
		if s, ok := structuredText(res.StructuredContent, texts); ok {
			parts = append(parts, Part{Text: s})
		}
	}
	if len(parts) == 0 || (noted && len(parts) == 1) {
		parts = append(parts, Part{Text: NoContentNote})
	}
	return parts
}

// renderContent renders one content item. ok is false only for an item that
// holds nothing to show (a nil item, or empty text).
func renderContent(c mcp.Content, t Target) (p Part, ok bool) {
	switch c := c.(type) {
	case nil:
		return Part{}, false
	case *mcp.TextContent:
		if c == nil || c.Text == "" {
			return Part{}, false
		}
		return Part{Text: c.Text}, true
	case *mcp.ImageContent:
		if c == nil {
			return Part{}, false
		}
		return imagePart("image", c.MIMEType, c.Data, t), true
	case *mcp.AudioContent:
		if c == nil {
			return Part{}, false
		}
		return Part{Text: fmt.Sprintf("[audio (%s, %d bytes) not shown: %s cannot carry audio]",
			mimeText(c.MIMEType), len(c.Data), t.Name)}, true
	case *mcp.ResourceLink:
		if c == nil {
			return Part{}, false
		}
		return Part{Text: linkText(c)}, true
	case *mcp.EmbeddedResource:
		if c == nil {
			return Part{}, false
		}
		r := c.Resource
		switch {
		case r == nil:
			return Part{Text: "[an embedded resource with no contents]"}, true
		case r.Blob != nil && strings.HasPrefix(strings.ToLower(r.MIMEType), "image/"):
			return imagePart("resource "+r.URI, r.MIMEType, r.Blob, t), true
		case r.Blob != nil:
			return Part{Text: fmt.Sprintf("[resource %s (%s, %d bytes of binary data) not shown: %s cannot carry it]",
				r.URI, mimeText(r.MIMEType), len(r.Blob), t.Name)}, true
		default:
			return Part{Text: fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, mimeText(r.MIMEType), r.Text)}, true
		}
	default:
		return Part{Text: fmt.Sprintf("[content of type %s not shown: it is not valid in a tool result]", contentType(c))}, true
	}
}

// imagePart passes an image on when t accepts images and its bytes are a
// format every supported API documents (PNG, JPEG, GIF, WebP). The type its
// bytes show is used, not the declared one: the server's label is not
// trusted to match, and a mismatched image would fail the whole request.
func imagePart(what, declared string, data []byte, t Target) Part {
	if !t.Images {
		return Part{Text: fmt.Sprintf("[%s (%s, %d bytes) not shown: %s carry only text]",
			what, mimeText(declared), len(data), t.Name)}
	}
	mt := SniffImage(data)
	if mt == "" {
		return Part{Text: fmt.Sprintf("[%s (%s, %d bytes) not shown: its data is not a PNG, JPEG, GIF or WebP image]",
			what, mimeText(declared), len(data))}
	}
	return Part{Image: &Image{MediaType: mt, Data: data}}
}

// SniffImage returns the media type of a PNG, JPEG, GIF or WebP image from
// its leading bytes, or "" for anything else. It is the check every Image
// that Render returns has passed.
func SniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

var mimeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$`)

// mimeText shows a server-sent MIME type in a placeholder: as is when it
// looks like one, quoted and bounded otherwise, so a hostile "type" cannot
// pass for the host's own words.
func mimeText(s string) string {
	switch {
	case s == "":
		return "no MIME type"
	case len(s) <= 100 && mimeRE.MatchString(s):
		return s
	case len(s) > 100:
		s = s[:100] + "..."
	}
	return "MIME type " + strconv.Quote(s)
}

// linkText describes a resource link for the model.
func linkText(l *mcp.ResourceLink) string {
	var b strings.Builder
	b.WriteString("[resource link] ")
	b.WriteString(l.URI)
	if name := l.Title; name != "" || l.Name != "" {
		if name == "" {
			name = l.Name
		}
		b.WriteString(" (" + name + ")")
	}
	if l.MIMEType != "" {
		b.WriteString(", " + mimeText(l.MIMEType))
	}
	if l.Size != nil {
		fmt.Fprintf(&b, ", %d bytes", *l.Size)
	}
	if l.Description != "" {
		b.WriteString("\n" + l.Description)
	}
	return b.String()
}

// contentType returns the MCP "type" of a content item for a placeholder.
func contentType(c mcp.Content) string {
	var v struct {
		Type string `json:"type"`
	}
	if b, err := c.MarshalJSON(); err == nil && json.Unmarshal(b, &v) == nil && v.Type != "" {
		return strconv.Quote(v.Type)
	}
	return fmt.Sprintf("%T", c)
}

// structuredText returns structured content as compact JSON text, unless one
// of texts already holds the same JSON value (ok is then false).
func structuredText(v any, texts []string) (s string, ok bool) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("[structured content not shown: it cannot be encoded as JSON: %v]", err), true
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	want, err := decodeJSON(b)
	if err != nil {
		return fmt.Sprintf("[structured content not shown: it cannot be encoded as JSON: %v]", err), true
	}
	for _, t := range texts {
		if got, err := decodeJSON([]byte(t)); err == nil && reflect.DeepEqual(got, want) {
			return "", false
		}
	}
	return string(b), true
}

// decodeJSON decodes one JSON value, keeping numbers as written so that
// large integers compare exactly.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b[d.InputOffset():])) != 0 {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// ErrorText returns the text the model reads for a call that failed before
// or instead of reaching the tool: "The call failed: " and err's text, or a
// note that no reason was given when err is nil.
func ErrorText(err error) string {
	if err == nil {
		return callFailed + "no reason was given"
	}
	return callFailed + err.Error()
}
