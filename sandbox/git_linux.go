package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readGitFile reads at most maxGitFileLen+1 bytes of the regular file at p
// (without following a final symbolic link) and parses it.
func readGitFile(p, prefix string) (string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", errBadGitFile, p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFileLen+1))
	if err != nil {
		return "", err
	}
	return parseGitFile(b, prefix, filepath.Dir(p))
}

// gitPaths returns what git, run in worktree, would read as the
// repository: the ".git" found in worktree or its nearest ancestor that has
// one, and, when that ".git" is a file, the git directory it names and that
// directory's common directory (its "commondir" file, as in a linked
// worktree). Paths that do not exist are returned too (a ".git" file may
// name a directory that is gone); a worktree in no repository gives none.
func gitPaths(worktree string) ([]string, error) {
	dotgit := ""
	for d := worktree; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if _, err := os.Lstat(p); err == nil {
			dotgit = p
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the repository's %s: %w", p, err)
		}
		if d == "/" {
			return nil, nil
		}
	}
	st, err := os.Lstat(dotgit)
	if err != nil {
		return nil, fmt.Errorf("the repository's %s: %w", dotgit, err)
	}
	out := []string{dotgit}
	if !st.Mode().IsRegular() {
		// A directory, or a symbolic link that protectPath refuses when
		// it lies in a writable path.
		return out, nil
	}
	gitdir, err := readGitFile(dotgit, "gitdir: ")
	if err != nil {
		return nil, fmt.Errorf("the repository's %s: %w", dotgit, err)
	}
	out = append(out, gitdir)
	common, err := readGitFile(filepath.Join(gitdir, "commondir"), "")
	switch {
	case err == nil:
		out = append(out, common)
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("the git directory %s named by %s: %w", gitdir, dotgit, err)
	}
	return out, nil
}
