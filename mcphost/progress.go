package mcphost

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxProgressMessage bounds the message of one progress notification that
// reaches Options.OnProgress; a longer one is cut at a rune boundary.
const maxProgressMessage = 1000

// Progress is one progress notification of a call in flight.
type Progress struct {
	// Tool is the model name of the tool called; Server its server.
	Tool, Server string
	// Progress is how far the work is; it increases with every
	// notification. Total is how far it goes, 0 when the server does not
	// know.
	Progress, Total float64
	// Message is the server's text (at most 1000 bytes): print it through
	// pin.Visible.
	Message string
}

// progressCall is what a progress token stands for.
type progressCall struct {
	tool, server string
}

// progressToken registers a call for progress notifications and returns
// its token and a function that unregisters it. Tokens are never reused
// in a session, so a late notification of a finished call is dropped.
func (s *Session) progressToken(e *toolEntry) (string, func()) {
	token := "mcphost-" + strconv.FormatUint(s.progressSeq.Add(1), 10)
	s.progress.Store(token, progressCall{tool: e.Name, server: e.Server})
	return token, func() { s.progress.Delete(token) }
}

// onProgress routes a server's progress notification to Options.OnProgress,
// if it is of a call in flight to that server. Others (a token mcphost did
// not give, or gave to another server, or of a call that ended) are
// dropped.
func (srv *server) onProgress(raw json.RawMessage) {
	s := srv.sess
	if s.opts.OnProgress == nil {
		return
	}
	var params mcp.ProgressNotificationParams
	if json.Unmarshal(raw, &params) != nil {
		return
	}
	token, ok := params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := s.progress.Load(token)
	if !ok || v.(progressCall).server != srv.cfg.Name {
		return
	}
	pc := v.(progressCall)
	s.opts.OnProgress(Progress{Tool: pc.tool, Server: pc.server, Progress: params.Progress,
		Total: params.Total, Message: cutText(params.Message, maxProgressMessage)})
}

// cutText cuts s to at most n bytes at a rune boundary, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s[… %d bytes cut]", s[:cut], len(s)-cut)
}
