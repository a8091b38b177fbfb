package mcphost

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

// recordProtect adds to the record in dir the paths of opt (this
// session's Options.Protect, resolved) that it lacks, and returns what it
// held before. A record that cannot be read or added to is an error that
// says what to do: this session could not protect what an earlier one
// asked for, or a later one what this one asks for.
func recordProtect(dir string, opt []string) ([]string, error) {
	recorded, err := readProtectRecord(dir)
	if err != nil {
		return nil, fmt.Errorf("mcphost: the paths that agents' Options.Protect named, which every session protects, cannot be read (%w), so no server starts: remove the record (an agent's next session records its paths again)", err)
	}
	var add []string
	for _, p := range opt {
		if !slices.Contains(recorded, p) && !slices.Contains(add, p) {
			add = append(add, p)
		}
	}
	if len(add) > 0 {
		if err := appendProtectRecord(dir, add); err != nil {
			return nil, fmt.Errorf("mcphost: recording in %s that %s must be protected failed (%w), so that the commands notices suggest (mcphost approve, list, check) would let servers write them: no server starts; make the state directory writable", dir, strings.Join(add, ", "), err)
		}
	}
	return recorded, nil
}
