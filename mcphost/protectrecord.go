package mcphost

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
// without repeats. A line that is not a JSON string (one cut by a crash)
// is skipped. No record is no paths.
func readProtectRecord(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, protectRecord))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxProtectRecord {
		return nil, fmt.Errorf("%s cannot be read whole (%v; a regular file of at most %d bytes)", f.Name(), err, maxProtectRecord)
	}
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(f, maxProtectRecord))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for sc.Scan() {
		var p string
		if json.Unmarshal(sc.Bytes(), &p) != nil || !filepath.IsAbs(p) || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	return out, nil
}

// appendProtectRecord appends paths to the record in dir, each a line of
// its own (after a newline if the record ends in a torn one).
func appendProtectRecord(dir string, paths []string) error {
	var b []byte
	for _, p := range paths {
		line, err := json.Marshal(p)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	f, err := os.OpenFile(filepath.Join(dir, protectRecord), os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	var last [1]byte
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil || last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
