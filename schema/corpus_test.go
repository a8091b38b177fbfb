package schema

import (
	"testing"
)

// TestCorpus closes every schema of the shared corpus and compares the
// offered schema, the strict form, the problems per profile, the fields
// and the check notes with testdata/corpus.golden.json (reviewed by hand).
func TestCorpus(t *testing.T) {
	compareGolden(t, "corpus.golden.json", corpus(t))
}
