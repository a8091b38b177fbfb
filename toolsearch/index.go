package toolsearch

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcphost/mcphost/mcphost"
)

// BM25's parameters, at the values the literature settled on: k1 bounds
// how much a repeated term adds, b how much a long document is discounted.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Field weights: a word of a tool's name says more about what it does
// than a word of its description, which often explains other tools too.
const (
	weightName      = 3
	weightServer    = 1
	weightTitle     = 2
	weightDesc      = 1
	weightParam     = 1
	weightParamDesc = 0.5
)

// Index is a BM25 index over the names, titles, descriptions and
// parameters of a set of offered tools. Its methods are safe for
// concurrent use: Search runs lock-free against the index the last
// Rebuild published, and Rebuilds are serialized.
//
// Index never returns a tool that the offered function (see New) does not
// return at the time of the search, nor one whose definition changed
// since it was indexed: a tool that was held, denied or changed after the
// last Rebuild is filtered out at search time, so a late Rebuild can make
// the index miss a tool, never leak one.
type Index struct {
	offered   func() []mcphost.Tool
	rebuildMu sync.Mutex
	snap      atomic.Pointer[snapshot]
}

// snapshot is one built index. Immutable once published.
type snapshot struct {
	docs   []doc
	post   map[string][]posting
	avgLen float64
}

type doc struct {
	name   string
	digest string
	// fp fingerprints the indexed text, for tools without a Digest (built
	// by hand): a search must not return a tool whose text changed.
	fp     uint64
	length float64
}

type posting struct {
	doc int32
	tf  float32
}

// seed keys the fingerprints; it lives as long as the process, as do the
// fingerprints.
var seed = maphash.MakeSeed()

// New returns an index over the tools offered returns, built at once.
// offered is called by New, by every Rebuild and by every Search: pass
// Session.Tools (or a function that calls it), so that the index holds
// only tools the session offers the model, and searches never return one
// it no longer offers. offered must be safe for concurrent use and must
// not call the Index. A nil offered offers nothing.
//
// Only admissible tools are indexed and returned: offered (not denied, not
// withheld) and not changed since their review (Pin is not PinChanged),
// whatever offered returns, so that the index holds only text a person
// reviewed or trusted on first sight.
func New(offered func() []mcphost.Tool) *Index {
	if offered == nil {
		offered = func() []mcphost.Tool { return nil }
	}
	x := &Index{offered: offered}
	x.Rebuild()
	return x
}

// admissible reports whether t may be indexed and returned.
func admissible(t *mcphost.Tool) bool {
	return t.Offered() && t.Pin != mcphost.PinChanged
}

// Rebuild re-reads the offered tools and replaces the index. Call it from
// Options.OnToolsChanged, so that tools a server added (once offered) can
// be found; tools it removed or changed are never returned either way.
// Searches that run meanwhile use the previous index.
func (x *Index) Rebuild() {
	x.rebuildMu.Lock()
	defer x.rebuildMu.Unlock()
	x.snap.Store(build(x.offered()))
}

// Len returns the number of tools in the index.
func (x *Index) Len() int { return len(x.snap.Load().docs) }

func build(tools []mcphost.Tool) *snapshot {
	s := &snapshot{post: make(map[string][]posting)}
	var (
		total float64
		tf    = map[string]float64{}
		buf   []string
	)
	for i := range tools {
		t := &tools[i]
		if !admissible(t) {
			continue
		}
		clear(tf)
		add := func(text string, w float64) {
			buf = terms(buf[:0], text)
			for _, term := range buf {
				tf[term] += w
			}
		}
		add(t.Tool, weightName)
		if t.Tool == "" {
			add(t.Name, weightName)
		}
		add(t.Server, weightServer)
		add(t.Title, weightTitle)
		add(t.Description, weightDesc)
		params(t.Schema, func(name, desc string) {
			add(name, weightParam)
			add(desc, weightParamDesc)
		})
		var length float64
		id := int32(len(s.docs))
		for term, f := range tf {
			s.post[term] = append(s.post[term], posting{doc: id, tf: float32(f)})
			length += f
		}
		s.docs = append(s.docs, doc{name: t.Name, digest: t.Digest, fp: fingerprint(t), length: length})
		total += length
	}
	if len(s.docs) > 0 {
		s.avgLen = total / float64(len(s.docs))
	}
	return s
}

// fingerprint hashes the text of t that the index reads or a search
// returns.
func fingerprint(t *mcphost.Tool) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range []string{t.Name, t.Server, t.Tool, t.Title, t.Description} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	h.Write(t.Schema)
	for _, k := range slices.Sorted(maps.Keys(t.Schemas)) {
		h.WriteByte(0)
		h.WriteString(k)
		h.WriteByte(0)
		h.Write(t.Schemas[k])
	}
	return h.Sum64()
}

// params calls f with the name and description of every property of
// every object schema in schema, nested ones included. A schema that is
// not JSON has no parameters to index.
func params(schema json.RawMessage, f func(name, desc string)) {
	if len(schema) == 0 {
		return
	}
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		// Schemas the session offers are bounded already; the bound here
		// keeps a hand-built tool from costing more than it should.
		if depth > 32 {
			return
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e, depth+1)
			}
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				names := make([]string, 0, len(props))
				for name := range props {
					names = append(names, name)
				}
				slices.Sort(names)
				for _, name := range names {
					desc := ""
					if p, ok := props[name].(map[string]any); ok {
						desc, _ = p["description"].(string)
					}
					f(name, desc)
				}
			}
			for k, e := range v {
				if k == "properties" {
					// Each property's schema, not the map of names.
					if pm, ok := e.(map[string]any); ok {
						for _, p := range pm {
							walk(p, depth+1)
						}
						continue
					}
				}
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
}

// Result is one tool a search found: the tool as offered at the time of
// the search (a copy the caller owns) and its BM25 score, higher is
// better. Scores compare only within one search.
type Result struct {
	Tool  mcphost.Tool
	Score float64
}

// Search returns at most k tools that match query, best first (ties by
// name), each offered at the time of the search and unchanged since it
// was indexed. A query is free text: words are split, lower-cased and
// stemmed as the tools' text was, and only its first kilobyte and 64
// distinct words count. A query with no word the index knows, or k < 1,
// returns nil. Search is local (no network) and takes about as long as
// one call of the offered function plus a walk of the postings of the
// query's words.
func (x *Index) Search(query string, k int) []Result {
	if k < 1 {
		return nil
	}
	s := x.snap.Load()
	qt := queryTerms(query)
	if len(qt) == 0 || len(s.docs) == 0 {
		return nil
	}
	k = min(k, len(s.docs)) // so that 2*k below cannot overflow
	scores := make([]float64, len(s.docs))
	n := float64(len(s.docs))
	for _, term := range qt {
		ps := s.post[term]
		if len(ps) == 0 {
			continue
		}
		// BM25's idf, kept positive (the "+1" form) so that a word every
		// tool has still adds a little rather than subtracting.
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			d := &s.docs[p.doc]
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*d.length/s.avgLen))
		}
	}
	var hits []int32
	for i, sc := range scores {
		if sc > 0 {
			hits = append(hits, int32(i))
		}
	}
	if len(hits) == 0 {
		return nil
	}
	slices.SortFunc(hits, func(a, b int32) int {
		if scores[a] != scores[b] {
			if scores[a] > scores[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(s.docs[a].name, s.docs[b].name)
	})
	// Check the best hits against what is offered now, walking the
	// offered tools once per round; a round that leaves fewer than k
	// checks four times as many hits.
	tools := x.offered()
	for m := 2*k + 8; ; m *= 4 {
		cands := hits[:min(m, len(hits))]
		pos := make(map[string]int, len(cands))
		for i, h := range cands {
			pos[s.docs[h].name] = i
		}
		now := make([]*mcphost.Tool, len(cands))
		for i := range tools {
			t := &tools[i]
			j, ok := pos[t.Name]
			if !ok || !admissible(t) {
				continue
			}
			if d := &s.docs[cands[j]]; t.Digest == d.digest && fingerprint(t) == d.fp {
				now[j] = t
			}
		}
		var out []Result
		for j, t := range now {
			if t != nil {
				out = append(out, Result{Tool: clone(*t), Score: scores[cands[j]]})
				if len(out) == k {
					return out
				}
			}
		}
		if len(cands) == len(hits) {
			return out
		}
	}
}

// current returns the admissible tools offered now, by name.
func (x *Index) current() map[string]*mcphost.Tool {
	tools := x.offered()
	m := make(map[string]*mcphost.Tool, len(tools))
	for i := range tools {
		if admissible(&tools[i]) {
			m[tools[i].Name] = &tools[i]
		}
	}
	return m
}

// clone returns a copy of t that shares no memory with it: offered may
// return the same slice to every caller.
func clone(t mcphost.Tool) mcphost.Tool {
	t.Schema = slices.Clone(t.Schema)
	t.Definition = slices.Clone(t.Definition)
	t.Annotations = slices.Clone(t.Annotations)
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.Unchecked = slices.Clone(t.Unchecked)
	t.Fields = slices.Clone(t.Fields)
	t.Changed = slices.Clone(t.Changed)
	if t.Schemas != nil {
		m := make(map[string]json.RawMessage, len(t.Schemas))
		for k, v := range t.Schemas {
			m[k] = slices.Clone(v)
		}
		t.Schemas = m
	}
	t.StrictProblems = maps.Clone(t.StrictProblems)
	return t
}
