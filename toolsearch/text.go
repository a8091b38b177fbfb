package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxQueryBytes and maxQueryTerms bound the work one query costs: a model
// that sends a megabyte of query gets its first kilobyte searched.
const (
	maxQueryBytes = 1024
	maxQueryTerms = 64
)

// stopWords are English words that say nothing about which tool fits. They
// are dropped from documents and queries alike, so that "list all of the
// notes" and "list notes" score the same.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true,
	"by": true, "can": true, "do": true, "for": true, "from": true, "how": true, "i": true,
	"if": true, "in": true, "into": true, "is": true, "it": true, "its": true, "me": true,
	"my": true, "of": true, "on": true, "or": true, "our": true, "so": true, "that": true,
	"the": true, "their": true, "then": true, "there": true, "this": true, "to": true,
	"us": true, "was": true, "we": true, "what": true, "when": true, "which": true,
	"will": true, "with": true, "you": true, "your": true, "mcp": true,
}

// terms appends to dst the search terms of s: words split at every
// character that is not a letter or digit, at lower-to-upper case changes
// (camelCase), before the last capital of a run of capitals followed by a
// lower-case letter (HTTPServer: http, server), and between letters and
// digits; lower-cased, stemmed, stop words dropped. Invalid UTF-8 counts as
// a separator.
func terms(dst []string, s string) []string {
	// Each word is the span [start, i) of s; prev is the class of the
	// rune before i.
	const (
		none = iota
		lower
		upper
		digit
		other // a letter without case (CJK, ...)
	)
	class := func(r rune) int {
		switch {
		case r == utf8.RuneError:
			return none
		case unicode.IsLower(r):
			return lower
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			return upper
		case unicode.IsDigit(r):
			return digit
		case unicode.IsLetter(r) || unicode.IsMark(r):
			return other
		}
		return none
	}
	emit := func(w string) {
		if w == "" {
			return
		}
		w = stem(strings.ToLower(w))
		if w != "" && !stopWords[w] {
			dst = append(dst, w)
		}
	}
	start, prev, prevStart := -1, none, 0
	for i, r := range s {
		c := class(r)
		if r == utf8.RuneError {
			// A literal U+FFFD decodes to width 3 but still separates.
			c = none
		}
		if c == none {
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
			prev = none
			continue
		}
		if start < 0 {
			start, prev, prevStart = i, c, i
			continue
		}
		split := false
		switch {
		case prev == lower && c == upper:
			split = true
		case (prev == digit) != (c == digit):
			split = true
		case prev == upper && c == lower && prevStart > start:
			// "HTTPServer": the S begins the next word.
			emit(s[start:prevStart])
			start = prevStart
		}
		if split {
			emit(s[start:i])
			start = i
		}
		prev, prevStart = c, i
	}
	if start >= 0 {
		emit(s[start:])
	}
	return dst
}

// stem strips the commonest English inflections, so that "files", "filed"
// and "filing" meet "file". It is deliberately crude (a few suffix rules,
// nothing a dictionary would know): documents and queries go through the
// same rules, so a wrong stem costs nothing as long as it is consistent.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:n-2])
	case n > 3 && (strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	// "create", "created" and "creating" all end as "creat"; "file",
	// "files" and "filed" as "fil".
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

// undouble turns "stopp" (from "stopping") into "stop".
func undouble(w string) string {
	if n := len(w); n > 2 && w[n-1] == w[n-2] && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z' {
		return w[:n-1]
	}
	return w
}

// queryTerms returns the terms of a query, bounded by maxQueryBytes and
// maxQueryTerms, each term once (a repeated word does not weigh more).
func queryTerms(q string) []string {
	if len(q) > maxQueryBytes {
		q = q[:maxQueryBytes]
	}
	ts := terms(nil, q)
	seen := make(map[string]bool, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}
