package mcphost

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResources bounds the resources mcphost lists from one server, and
// maxResourceBytes their size in all (each as JSON): 10,000 resources of
// a few hundred bytes each fit, and a server cannot grow the host's memory
// through a listing by more.
const (
	maxResources     = 10000
	maxResourceBytes = 16 << 20
)

// Resources lists a running server's resources (every page of
// resources/list), bounded by ctx and the server's call_timeout, and by
// 1000 pages, 10000 resources and 16 MiB of them as JSON. Resources are data, not instructions:
// they are not pinned, and their names and descriptions are server text
// (show them through pin.Visible). Errors wrap ErrUnknownServer (no server
// of that name), ErrServerGone, ErrTimeout or the server's error. Safe for
// concurrent use. The resources are the caller's: copies, never the ones
// the go-sdk keeps in its cache of a 2026-era server's listing (ttlMs).
func (s *Session) Resources(ctx context.Context, server string) ([]*mcp.Resource, error) {
	srv, cs, err := s.liveServer("list resources", server)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	defer cancel()
	var (
		all     []*mcp.Resource
		size    int
		cursor  string
		cursors = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: more than %d pages; stopped reading", server, maxPages)
		}
		res, err := cs.ListResources(cctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, srv.requestError(ctx, cctx, "list resources", err)
		}
		if len(all)+len(res.Resources) > maxResources {
			return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: more than %d resources; stopped reading", server, maxResources)
		}
		for _, r := range res.Resources {
			if r == nil {
				continue
			}
			b, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: %w", server, err)
			}
			size += len(b)
			if size > maxResourceBytes {
				break
			}
			c := new(mcp.Resource)
			if err := json.Unmarshal(b, c); err != nil {
				return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: %w", server, err)
			}
			all = append(all, c)
		}
		if size > maxResourceBytes {
			return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: more than %d bytes of resources; stopped reading", server, maxResourceBytes)
		}
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
		if cursors[cursor] {
			return nil, fmt.Errorf("mcphost: list resources of [mcp.%s]: repeated cursor %q: the server paginates in a loop", server, printable(cursor, 40))
		}
		cursors[cursor] = true
	}
}

// ReadResource reads one resource of a running server (resources/read),
// bounded by ctx and the server's call_timeout. Its contents are cut to the
// server's max_output: text at a rune boundary, a blob that does not fit
// dropped, and a last text content says what is missing. Errors wrap
// ErrUnknownServer (no server of that name), ErrServerGone, ErrTimeout or
// the server's error. Safe for concurrent use.
func (s *Session) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	srv, cs, err := s.liveServer("read resource", server)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	defer cancel()
	res, err := cs.ReadResource(cctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, srv.requestError(ctx, cctx, "read resource "+printable(uri, 100), err)
	}
	return cutResource(res, srv.cfg.MaxOutput, server), nil
}

// cutResource bounds a resource as cut bounds a tool's result: a text
// counts its bytes, everything else its JSON (a content's URI, MIME type,
// blob and _meta; the result's _meta, cacheScope, requestState and
// inputRequests). Contents are kept in order as far as they fit, a
// content's text cut at a rune boundary and its _meta dropped first;
// then the result's own fields where they still fit.
//
// It cuts a copy: the go-sdk hands every reader of a 2026-era server's
// resource the one result it cached (ttlMs), which two reads at once would
// otherwise both change, and later reads would get cut.
func cutResource(res *mcp.ReadResourceResult, limit int64, server string) *mcp.ReadResourceResult {
	if res == nil {
		return &mcp.ReadResourceResult{}
	}
	out := *res
	res = &out
	left, total := limit, int64(0)
	var gone removed
	var kept []*mcp.ResourceContents
	for i, c := range res.Contents {
		if c == nil {
			continue
		}
		rest, meta := resourceSize(c, i == 0)
		n := min(int64(len(c.Text))+rest+meta, unfit)
		total = min(total+n, unfit)
		switch {
		case n <= left:
			left -= n
			cc := *c
			kept = append(kept, &cc)
		case c.Blob == nil && left > rest:
			cc := *c
			if meta > 0 {
				cc.Meta = nil
				gone.add("_meta of item %d", i+1)
			}
			if t := int64(len(c.Text)); t <= left-rest {
				left -= rest + t
			} else {
				cc.Text = cutText(c.Text, int(left-rest))
				gone.add("the end of item %d", i+1)
				left = 0
			}
			kept = append(kept, &cc)
		default:
			gone.item(i + 1)
		}
	}
	if n := fieldSize("cacheScope", res.CacheScope); n > left {
		res.CacheScope = ""
		gone.add("cacheScope")
	} else {
		left -= n
	}
	cutResultMeta(left, &res.Meta, &res.RequestState, &res.InputRequests, &gone)
	missing := gone.String()
	if missing == "" {
		res.Contents = kept
		return res
	}
	kept = append(kept, &mcp.ResourceContents{URI: "mcphost:cut", MIMEType: "text/plain", Text: fmt.Sprintf(
		"[mcphost: this resource was cut: it has about %d bytes, more than the %d-byte max_output of [mcp.%s]; not shown: %s]",
		total, limit, server, missing)})
	res.Contents = kept
	return res
}

// resourceSize returns what a resource content costs besides its text:
// the JSON of the rest but its _meta (with a comma unless it is the
// first), and that of its _meta. Its blob is counted, not encoded.
func resourceSize(c *mcp.ResourceContents, first bool) (rest, meta int64) {
	bare := mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType}
	rest = fieldSize("", &bare) - int64(len(`,"":`))
	if c.Blob != nil {
		rest += int64(len(`,"blob":""`) + base64.StdEncoding.EncodedLen(len(c.Blob)))
	}
	if !first {
		rest++
	}
	return min(rest, unfit), metaSize(c.Meta)
}

// liveServer returns a running server and its session, or an error for
// what.
func (s *Session) liveServer(what, server string) (*server, *mcp.ClientSession, error) {
	srv, ok := s.servers[server]
	if !ok {
		return nil, nil, fmt.Errorf("mcphost: %s: %w: no server named %q", what, ErrUnknownServer, printable(server, 80))
	}
	cs, err := srv.session()
	if err != nil {
		return nil, nil, fmt.Errorf("mcphost: %s: %w", what, err)
	}
	return srv, cs, nil
}

// requestError explains a failed request to the server made under cctx, a
// child of ctx bounded by call_timeout.
func (srv *server) requestError(ctx, cctx context.Context, what string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case cctx.Err() != nil:
		return fmt.Errorf("mcphost: %s: %w: no result within call_timeout %v of [mcp.%s]", what, ErrTimeout, srv.cfg.CallTimeout, srv.cfg.Name)
	}
	return fmt.Errorf("mcphost: %s of server %s: %w", what, srv.cfg.Name, fromServer(err))
}
