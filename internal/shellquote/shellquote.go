// Package shellquote quotes words for a POSIX shell, for the mcphost
// commands that notices, errors and the CLI suggest: a command is printed
// so that it works as pasted, whatever the paths and names in it hold.
package shellquote

import "strings"

// safe are the bytes a word may hold and still be printed bare.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,"

// Quote returns s as one word of a POSIX shell: bare if every byte of it is
// safe there, else in single quotes (a quote in s is closed, escaped and
// reopened). It does not make control characters visible: callers print
// what they quote through pin.Visible where s may hold them.
func Quote(s string) string {
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
