package mcphost

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The state directory, which no server can reach, holds records that
// sessions append JSON lines to and read whole: servers-without-git.log
// (gitless.go) and protected-paths (protectrecord.go). appendRecord and
// readRecord are how both are written and read.

// maxRecordLine bounds one line of a record.
const maxRecordLine = 64 << 10

// appendRecord appends each of values, as JSON, to the record at path, a
// line each, creating it (mode 0600). It appends (O_APPEND), so that
// sessions at once do not lose each other's lines; if the record does not
// end with a newline (a write cut short), one comes first, so that no
// value is joined to a torn line and lost with it.
func appendRecord(path string, values ...any) error {
	var b []byte
	for _, v := range values {
		line, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
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

// readRecord calls line with each line of the record at path (a missing
// record has none). A record that is not a regular file of at most limit
// bytes, or has a line longer than maxRecordLine, is an error: the caller
// must not take what it read as the whole record.
func readRecord(path string, limit int64, line func([]byte)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return fmt.Errorf("the record %s cannot be read whole (%v; a regular file of at most %d bytes)", path, err, limit)
	}
	sc := bufio.NewScanner(io.LimitReader(f, limit))
	sc.Buffer(make([]byte, 0, 4096), maxRecordLine)
	for sc.Scan() {
		line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
