package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
)

// maxGitFileLen bounds a ".git" file and a "commondir" file: each holds one
// path, and git itself refuses paths longer than PATH_MAX (4096).
const maxGitFileLen = 4096

// errBadGitFile is wrapped by every error of parseGitFile.
var errBadGitFile = errors.New("not a git pointer file")

// parseGitFile reads the path that a ".git" file (prefix "gitdir: ") or a
// "commondir" file (prefix "") names, the way git reads them: the prefix,
// then the path up to the end, without trailing newlines and carriage
// returns. A relative path is relative to base, the directory holding the
// file. The result is clean and absolute. It refuses an empty path, a NUL
// byte, a line break inside the path and content longer than maxGitFileLen.
func parseGitFile(content []byte, prefix, base string) (string, error) {
	if len(content) > maxGitFileLen {
		return "", fmt.Errorf("%w: longer than %d bytes", errBadGitFile, maxGitFileLen)
	}
	if !bytes.HasPrefix(content, []byte(prefix)) {
		return "", fmt.Errorf("%w: it does not start with %q", errBadGitFile, prefix)
	}
	p := bytes.TrimRight(content[len(prefix):], "\r\n")
	switch {
	case len(p) == 0:
		return "", fmt.Errorf("%w: it names no path", errBadGitFile)
	case bytes.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("%w: its path contains a NUL byte", errBadGitFile)
	case bytes.ContainsAny(p, "\r\n"):
		return "", fmt.Errorf("%w: its path spans lines", errBadGitFile)
	}
	s := string(p)
	if !filepath.IsAbs(s) {
		if !filepath.IsAbs(base) {
			return "", fmt.Errorf("%w: base %q is not absolute", errBadGitFile, base)
		}
		s = filepath.Join(base, s)
	}
	return filepath.Clean(s), nil
}
