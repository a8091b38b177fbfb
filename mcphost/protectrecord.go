package mcphost

import (
	"encoding/json"
	"path/filepath"
)

// What Options.Protect names holds in every session that shares its state
// directory, not only in the agent's own: the commands a notice suggests
// (mcphost approve, list, check) start the same servers without the
// agent's Options. So a session records, in the state directory (which no
// server can reach), each path its Options.Protect names that the record
// lacks, and every session protects what the record holds beside its own.
// A person who no longer wants a path protected removes its line, or the
// file.

// protectRecord is the record's file in the state directory: one JSON
// string a line, an absolute path (a directory's ending in "/"), appended
// (O_APPEND, so that sessions at once do not lose each other's lines).
const protectRecord = "protected-paths"

// maxProtectRecord bounds the record's reading; a session adds a line only
// for a path the record lacks, so it grows with the paths, not the
// sessions.
const maxProtectRecord = 1 << 20

// readProtectRecord returns the paths the record in dir holds, in order,
// without repeats. A line that is not a JSON string of an absolute path
// (one cut by a crash) is skipped. No record is no paths.
func readProtectRecord(dir string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	err := readRecord(filepath.Join(dir, protectRecord), maxProtectRecord, func(line []byte) {
		var p string
		if json.Unmarshal(line, &p) != nil || !filepath.IsAbs(p) || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendProtectRecord appends paths to the record in dir, a line each
// (appendRecord).
func appendProtectRecord(dir string, paths []string) error {
	values := make([]any, len(paths))
	for i, p := range paths {
		values[i] = p
	}
	return appendRecord(filepath.Join(dir, protectRecord), values...)
}
