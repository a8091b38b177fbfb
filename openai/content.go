package openai

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

// Texts this package adds to what the model reads. They are bracketed so
// that the model can tell the host's notes from the tool's own output.
const (
	toolErrorNote = "[the tool reported an error]"
	noContentNote = "[the tool returned no content]"
	callFailed    = "The call failed: "
)

// part is one piece of a tool result as the model will see it: text, or
// (when image is non-nil) an image the target API accepts.
type part struct {
	text  string
	image *image
}

// image is an image whose bytes were checked to be of mediaType.
type image struct {
	mediaType string
	data      []byte
}

// target describes what one API accepts in a tool result.
type target struct {
	// name is the API's name, for placeholders ("Chat Completions tool
	// messages").
	name string
	// images reports whether the API accepts images in a tool result.
	images bool
}

// render turns a tool result into parts for t. It never returns an empty
// slice and never drops content without a placeholder saying so.
func render(res *mcp.CallToolResult, t target) []part {
	if res == nil {
		return []part{{text: noContentNote}}
	}
	var parts []part
	if res.IsError {
		parts = append(parts, part{text: toolErrorNote})
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
			parts = append(parts, part{text: s})
		}
	}
	if len(parts) == 0 || (res.IsError && len(parts) == 1) {
		parts = append(parts, part{text: noContentNote})
	}
	return parts
}

// renderContent renders one content item. ok is false only for an item that
// holds nothing to show (a nil item, or empty text).
func renderContent(c mcp.Content, t target) (p part, ok bool) {
	switch c := c.(type) {
	case nil:
		return part{}, false
	case *mcp.TextContent:
		if c == nil || c.Text == "" {
			return part{}, false
		}
		return part{text: c.Text}, true
	case *mcp.ImageContent:
		if c == nil {
			return part{}, false
		}
		return imagePart("image", c.MIMEType, c.Data, t), true
	case *mcp.AudioContent:
		if c == nil {
			return part{}, false
		}
		return part{text: fmt.Sprintf("[audio (%s, %d bytes) not shown: %s cannot carry audio]",
			mimeText(c.MIMEType), len(c.Data), t.name)}, true
	case *mcp.ResourceLink:
		if c == nil {
			return part{}, false
		}
		return part{text: linkText(c)}, true
	case *mcp.EmbeddedResource:
		if c == nil {
			return part{}, false
		}
		r := c.Resource
		switch {
		case r == nil:
			return part{text: "[an embedded resource with no contents]"}, true
		case r.Blob != nil && strings.HasPrefix(strings.ToLower(r.MIMEType), "image/"):
			return imagePart("resource "+r.URI, r.MIMEType, r.Blob, t), true
		case r.Blob != nil:
			return part{text: fmt.Sprintf("[resource %s (%s, %d bytes of binary data) not shown: %s cannot carry it]",
				r.URI, mimeText(r.MIMEType), len(r.Blob), t.name)}, true
		default:
			return part{text: fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, mimeText(r.MIMEType), r.Text)}, true
		}
	default:
		return part{text: fmt.Sprintf("[content of type %s not shown: it is not valid in a tool result]", contentType(c))}, true
	}
}

// imagePart passes an image on when t accepts images and its bytes are a
// format both OpenAI APIs document (PNG, JPEG, GIF, WebP). The type its bytes
// show is used, not the declared one: the server's label is not trusted to
// match, and a mismatched image would fail the whole request.
func imagePart(what, declared string, data []byte, t target) part {
	if !t.images {
		return part{text: fmt.Sprintf("[%s (%s, %d bytes) not shown: %s carry only text]",
			what, mimeText(declared), len(data), t.name)}
	}
	mt := sniffImage(data)
	if mt == "" {
		return part{text: fmt.Sprintf("[%s (%s, %d bytes) not shown: its data is not a PNG, JPEG, GIF or WebP image]",
			what, mimeText(declared), len(data))}
	}
	return part{image: &image{mediaType: mt, data: data}}
}

// sniffImage returns the media type of a PNG, JPEG, GIF or WebP image from
// its leading bytes, or "".
func sniffImage(b []byte) string {
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

// errorText is the text the model reads for a call that failed.
func errorText(err error) string {
	if err == nil {
		return callFailed + "no reason was given"
	}
	return callFailed + err.Error()
}
