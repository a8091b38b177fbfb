package schema

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkClose closes the 36 reference-server tool schemas per
// iteration: a discovery of 10,000 such tools costs 10000/36 iterations.
func BenchmarkClose(b *testing.B) {
	schemas := referenceServers(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range schemas {
			if _, err := Close(s.Schema); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(schemas)), "ns/tool")
}

// BenchmarkCloseCorpus closes the corpus's 20 hard schemas per iteration.
func BenchmarkCloseCorpus(b *testing.B) {
	schemas := corpus(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range schemas {
			if _, err := Close(s.Schema); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(schemas)), "ns/tool")
}

// BenchmarkCloseGenerated closes schemas shaped like those of the
// discovery benchmark's 10,000 generated tools (mcphost's
// BenchmarkDiscovery10k): small, every one different.
func BenchmarkCloseGenerated(b *testing.B) {
	var schemas [][]byte
	for i := range 1000 {
		schemas = append(schemas, fmt.Appendf(nil, `{"type":"object","properties":{"x_%d":{"type":"string","description":"field %d"},"n":{"type":"integer","minimum":%d}},"required":["x_%d"]}`, i, i, i, i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Close(schemas[i%len(schemas)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCheck measures a call's FromModel and Check on a prepared tool.
func BenchmarkCheck(b *testing.B) {
	c, err := Close(json.RawMessage(toolSchema))
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"query":"abc","limit":10,"unit":null,"tags":["a","b"],"filter":{"owner":"o"},"edits":[{"old":"a","new":"b"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.FromModel(args)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Check(out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstCheck measures a tool's first Check, which prepares the
// validator (unmarshal and resolve), over the reference-server schemas.
func BenchmarkFirstCheck(b *testing.B) {
	schemas := referenceServers(b)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		var closed []*Closed
		for _, s := range schemas {
			c, err := Close(s.Schema)
			if err != nil {
				b.Fatal(err)
			}
			closed = append(closed, c)
		}
		b.StartTimer()
		for _, c := range closed {
			_ = c.Check(json.RawMessage(`{}`))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(schemas)), "ns/tool")
}

// BenchmarkForServer measures what a call does with the model's arguments
// (ForServer: FromModel and Check in one parse) on a prepared tool: the
// fixture server's echo tool with the arguments mcphost's BenchmarkCall
// sends, and toolSchema in its strict form, with a null to remove.
func BenchmarkForServer(b *testing.B) {
	for _, bc := range []struct{ name, schema, args string }{
		{"echo", `{"type":"object","properties":{"text":{"type":"string"},"note":{"type":"string"},"count":{"type":"integer","minimum":0}},"required":["text"]}`, `{"text":"hello"}`},
		{"tool", toolSchema, `{"query":"abc","limit":10,"unit":null,"tags":["a","b"],"filter":{"owner":"o"},"edits":[{"old":"a","new":"b"}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := Close(json.RawMessage(bc.schema))
			if err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(bc.args)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ForServer(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
