package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/internal/jsontree"
)

// Change is one top-level field of a tool definition (such as "description",
// "inputSchema", "annotations", "title", "outputSchema", "_meta", "icons" or
// "name") that differs between the reviewed and the current definition.
//
// Old and New are the field's value pretty-printed for a person: indented by
// two spaces per level, keys sorted, numbers exactly as written, and strings
// in double quotes with their real code points. Inside strings only the
// quote and the backslash are escaped (\" and \\), and a newline is written
// as \n followed by a line break, so that a long description is diffed line
// by line; a line that ends in \n is always inside a string. Old is "" when
// the field is new, New is "" when it was removed.
//
// Old and New may hold control and invisible characters exactly as the
// server sent them: show them only through Format, never print them raw.
type Change struct {
	Field    string
	Old, New string
}

// Diff compares two tool definitions field by field, after the same checks
// and normalization as Canonical, and returns the fields whose canonical
// values differ, sorted by field name. It returns no changes exactly when
// the two have the same digest, and an error wrapping ErrInvalid, naming
// which side, if either is not acceptable to Canonical.
func Diff(reviewed, current json.RawMessage) ([]Change, error) {
	old, err := canonical.ParseDefinition(reviewed)
	if err != nil {
		return nil, fmt.Errorf("reviewed definition: %w", err)
	}
	cur, err := canonical.ParseDefinition(current)
	if err != nil {
		return nil, fmt.Errorf("current definition: %w", err)
	}
	var changes []Change
	// Both member lists are sorted by key: merge them.
	i, j := 0, 0
	for i < len(old.Obj) || j < len(cur.Obj) {
		var o, c *jsontree.Member
		switch {
		case j == len(cur.Obj):
			o = &old.Obj[i]
			i++
		case i == len(old.Obj):
			c = &cur.Obj[j]
			j++
		default:
			switch cmp := strings.Compare(old.Obj[i].Name, cur.Obj[j].Name); {
			case cmp < 0:
				o = &old.Obj[i]
				i++
			case cmp > 0:
				c = &cur.Obj[j]
				j++
			default:
				o, c = &old.Obj[i], &cur.Obj[j]
				i++
				j++
			}
		}
		if o != nil && c != nil && bytes.Equal(jsontree.AppendMinimal(nil, o.Val), jsontree.AppendMinimal(nil, c.Val)) {
			continue
		}
		var ch Change
		if o != nil {
			ch.Field = o.Name
			ch.Old = string(appendDisplay(nil, o.Val, 0))
		}
		if c != nil {
			ch.Field = c.Name
			ch.New = string(appendDisplay(nil, c.Val, 0))
		}
		changes = append(changes, ch)
	}
	return changes, nil
}

// Fields returns the names of the changed fields for a one-line notice, such
// as "description, inputSchema", each made safe to print by Visible.
func Fields(changes []Change) string {
	var b strings.Builder
	for i, c := range changes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Visible(c.Field))
	}
	return b.String()
}

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// Format writes, for each change, a header naming the field and whether it
// was added, removed or changed, then a line diff in the style of a unified
// diff: hunks headed "@@ -l,n +l,n @@", lines prefixed "- " (reviewed), "+ "
// (current) or "  " (unchanged context, up to three lines around a change).
// The diff is minimal (Myers) unless the two sides differ in more than a
// thousand lines, where the differing middle is shown as all removed and all
// added; either way every differing line is shown. Where as many lines were
// added as removed, and the first character in which a removed line and its
// replacement differ is not ASCII on either side, a line such as
//
//	! line 7 after 9 characters: U+006F "o" became U+043E "о"
//
// names both characters by code point (the line number is the added line's),
// so that a look-alike letter cannot pass for an unchanged one.
//
// Every line is escaped as by Visible, except that backslashes are kept
// as they are (every backslash in Old and New already starts an escape, see
// Change), so the output is safe for a terminal and shows every character
// that differs: a zero-width space as <U+200B>, an escape character as \x1b.
// The changes must come from Diff. It returns the first error from w.
func Format(w io.Writer, changes []Change) error {
	var b []byte
	for _, c := range changes {
		b = b[:0]
		b = append(b, "field "...)
		b = appendVisible(b, string(appendDisplayString(nil, c.Field, false)), false)
		oldLines, newLines := splitLines(c.Old), splitLines(c.New)
		switch {
		case c.Old == "":
			b = append(b, " added\n"...)
		case c.New == "":
			b = append(b, " removed\n"...)
		default:
			b = append(b, " changed\n"...)
		}
		b = appendHunks(b, oldLines, newLines, lineDiff(oldLines, newLines))
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("pin: writing diff: %w", err)
		}
	}
	return nil
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// op is one line of an edit script.
type op uint8

const (
	opEqual op = iota
	opDelete
	opInsert
)

// edit is a run of n lines with the same op.
type edit struct {
	op op
	n  int
}

// appendHunks appends the edit script as unified-diff hunks.
func appendHunks(b []byte, a, c []string, script []edit) []byte {
	// Expand runs into per-line ops with their positions in a and c.
	type line struct {
		op   op
		x, y int // index in a (delete, equal) and c (insert, equal)
	}
	var lines []line
	x, y := 0, 0
	for _, e := range script {
		for range e.n {
			lines = append(lines, line{e.op, x, y})
			switch e.op {
			case opEqual:
				x++
				y++
			case opDelete:
				x++
			case opInsert:
				y++
			}
		}
	}
	for i := 0; i < len(lines); {
		if lines[i].op == opEqual {
			i++
			continue
		}
		// A hunk starts diffContext lines before this change and extends
		// over every change within 2*diffContext equal lines of the last.
		start := max(i-diffContext, 0)
		end := i
		for end < len(lines) {
			if lines[end].op != opEqual {
				end++
				continue
			}
			run := end
			for run < len(lines) && lines[run].op == opEqual {
				run++
			}
			if run == len(lines) || run-end > 2*diffContext {
				end = min(end+diffContext, run)
				break
			}
			end = run
		}
		var oldN, newN int
		for _, l := range lines[start:end] {
			if l.op != opInsert {
				oldN++
			}
			if l.op != opDelete {
				newN++
			}
		}
		b = append(b, "@@ -"...)
		b = appendRange(b, lines[start].x, oldN)
		b = append(b, " +"...)
		b = appendRange(b, lines[start].y, newN)
		b = append(b, " @@\n"...)
		for k := start; k < end; {
			if lines[k].op == opEqual {
				b = append(b, "  "...)
				b = appendVisible(b, a[lines[k].x], false)
				b = append(b, '\n')
				k++
				continue
			}
			// A changed stretch: its deletions, then its insertions.
			del := k
			for k < end && lines[k].op == opDelete {
				b = append(b, "- "...)
				b = appendVisible(b, a[lines[k].x], false)
				b = append(b, '\n')
				k++
			}
			ins := k
			for k < end && lines[k].op == opInsert {
				b = append(b, "+ "...)
				b = appendVisible(b, c[lines[k].y], false)
				b = append(b, '\n')
				k++
			}
			if ins-del == k-ins {
				for n := range ins - del {
					b = appendFirstDifference(b, a[lines[del+n].x], c[lines[ins+n].y], lines[ins+n].y+1)
				}
			}
		}
		i = end
	}
	return b
}

// appendFirstDifference appends a note naming, by code point, the first
// character where a removed line and the added line that replaced it (line
// newLine of the current text) differ, when either of the two is not ASCII. Escaping makes invisible characters
// visible, but a look-alike letter (Cyrillic "е" for Latin "e") is visible
// and still reads as unchanged; its code point does not.
func appendFirstDifference(b []byte, old, new string, newLine int) []byte {
	n := 0 // characters before the difference
	for old != "" && new != "" {
		ro, so := utf8.DecodeRuneInString(old)
		rn, sn := utf8.DecodeRuneInString(new)
		if ro != rn || so != sn {
			break
		}
		old, new = old[so:], new[sn:]
		n++
	}
	if (old == "" || old[0] < utf8.RuneSelf) && (new == "" || new[0] < utf8.RuneSelf) {
		return b
	}
	b = append(b, "! line "...)
	b = strconv.AppendInt(b, int64(newLine), 10)
	b = append(b, " after "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, " characters: "...)
	b = appendCodePoint(b, old)
	b = append(b, " became "...)
	b = appendCodePoint(b, new)
	return append(b, '\n')
}

// appendCodePoint describes the first character of s for appendFirstDifference.
func appendCodePoint(b []byte, s string) []byte {
	if s == "" {
		return append(b, "end of line"...)
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return fmt.Appendf(b, "byte 0x%02X", s[0])
	}
	b = fmt.Appendf(b, "U+%04X ", r)
	return appendVisible(b, string(appendDisplayString(nil, s[:size], false)), false)
}

// appendRange appends a unified-diff range: the 1-based first line and the
// count, where an empty range names the line before it.
func appendRange(b []byte, first, n int) []byte {
	if n == 0 {
		return strconv.AppendInt(append(strconv.AppendInt(b, int64(first), 10), ','), 0, 10)
	}
	b = strconv.AppendInt(b, int64(first+1), 10)
	return strconv.AppendInt(append(b, ','), int64(n), 10)
}

// maxEditDistance bounds the Myers search. Its memory is quadratic in the
// number of differing lines, and past this many the two texts have little
// in common: the middle is then shown as removed and added wholesale.
const maxEditDistance = 1000

// lineDiff returns an edit script turning a into c: equal runs, and within
// each changed stretch all deletions before all insertions.
func lineDiff(a, c []string) []edit {
	prefix := 0
	for prefix < len(a) && prefix < len(c) && a[prefix] == c[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(c)-prefix && a[len(a)-1-suffix] == c[len(c)-1-suffix] {
		suffix++
	}
	var script []edit
	script = appendEdit(script, opEqual, prefix)
	ma, mc := a[prefix:len(a)-suffix], c[prefix:len(c)-suffix]
	if middle, ok := myers(ma, mc, maxEditDistance); ok {
		for _, o := range middle {
			script = appendEdit(script, o, 1)
		}
	} else {
		script = appendEdit(script, opDelete, len(ma))
		script = appendEdit(script, opInsert, len(mc))
	}
	script = appendEdit(script, opEqual, suffix)
	return groupChanges(script)
}

func appendEdit(script []edit, o op, n int) []edit {
	if n == 0 {
		return script
	}
	if k := len(script); k > 0 && script[k-1].op == o {
		script[k-1].n += n
		return script
	}
	return append(script, edit{o, n})
}

// groupChanges reorders each stretch between equal runs to all deletions,
// then all insertions, which reads better than interleaved lines and does
// not change the lines shown.
func groupChanges(script []edit) []edit {
	var out []edit
	for i := 0; i < len(script); {
		if script[i].op == opEqual {
			out = appendEdit(out, opEqual, script[i].n)
			i++
			continue
		}
		var del, ins int
		for ; i < len(script) && script[i].op != opEqual; i++ {
			if script[i].op == opDelete {
				del += script[i].n
			} else {
				ins += script[i].n
			}
		}
		out = appendEdit(out, opDelete, del)
		out = appendEdit(out, opInsert, ins)
	}
	return out
}

// myers returns a shortest edit script from a to c, one op per line, by
// Myers' O(ND) greedy algorithm ("An O(ND) Difference Algorithm and Its
// Variations", 1986), or false if the edit distance exceeds maxD.
func myers(a, c []string, maxD int) ([]op, bool) {
	n, m := len(a), len(c)
	if n == 0 || m == 0 {
		ops := make([]op, 0, n+m)
		for range n {
			ops = append(ops, opDelete)
		}
		for range m {
			ops = append(ops, opInsert)
		}
		return ops, true
	}
	limit := min(n+m, maxD)
	// v[k+off] is the furthest x reached on diagonal k = x-y. trace[d] keeps
	// v[-d..d] after step d, for the walk back.
	off := limit + 1
	v := make([]int, 2*off+1)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: insertion
			} else {
				x = v[off+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && a[x] == c[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(trace, n, m), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

// backtrack walks the Myers trace from (n, m) back to (0, 0) and returns the
// edit script in forward order.
func backtrack(trace [][]int, n, m int) []op {
	var rev []op
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // v[-(d-1)..d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, opEqual)
			x--
			y--
		}
		if x == px {
			rev = append(rev, opInsert)
		} else {
			rev = append(rev, opDelete)
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, opEqual)
		x--
		y--
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
