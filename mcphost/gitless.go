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
	"slices"
	"time"
)

// A worktree in no git repository has no .git for the sandbox to keep
// read-only, so a server can make one (git init, at the top or in any
// directory of the worktree) and commit a lock there, which would then
// vouch for itself. So each session that starts servers in such a
// worktree writes, to the person's state directory (which no server can
// reach), when it began and when it ended; a repository at or within the
// worktree whose git directory was made within one of those windows (or
// whose making time cannot be told while such windows exist) vouches for
// nothing. A repository made before or between them vouches as any does.

// gitlessLog is the record's file in the state directory: one JSON object
// a line, appended (O_APPEND, so that sessions running at once do not lose
// each other's lines).
const gitlessLog = "servers-without-git.log"

// maxGitlessLog bounds the record's reading: each session in a worktree
// without a repository adds two lines of about 150 bytes. Past it the
// record cannot be read whole, and no repository a server could have made
// vouches.
const maxGitlessLog = 8 << 20

// gitlessEvent is one line of the record: a session began (End 0) or
// ended starting servers in Worktree while it was in no repository. Times
// are Unix nanoseconds.
type gitlessEvent struct {
	Worktree string `json:"worktree"`
	Start    int64  `json:"start"`
	End      int64  `json:"end,omitempty"`
	// record is the file the event was read from (not written).
	record string
}

// inNoRepository reports whether no directory from worktree up holds a
// ".git" entry (a directory, or the file of a linked worktree or
// submodule): git would find no repository for it.
func inNoRepository(worktree string) bool {
	for d := worktree; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// recordGitless appends ev to the record in dir.
func recordGitless(dir string, ev gitlessEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, gitlessLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// gitlessWindows returns, from the record in dir, the windows in which
// servers ran, in a worktree that was in no repository, where top lies
// (top is at or within that worktree), each with its End (0: the session
// did not say it ended, as when it was killed).
func gitlessWindows(dir, top string) ([]gitlessEvent, error) {
	f, err := os.Open(filepath.Join(dir, gitlessLog))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() > maxGitlessLog {
		return nil, fmt.Errorf("the record %s cannot be read whole (%v; at most %d bytes)", f.Name(), err, maxGitlessLog)
	}
	type key struct {
		worktree string
		start    int64
	}
	ends := map[key]int64{}
	var starts []key
	sc := bufio.NewScanner(io.LimitReader(f, maxGitlessLog))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for sc.Scan() {
		var ev gitlessEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || !under(top, ev.Worktree) {
			continue // a line cut by a crash, or another worktree's
		}
		k := key{ev.Worktree, ev.Start}
		if ev.End == 0 {
			starts = append(starts, k)
		} else {
			ends[k] = ev.End
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	out := make([]gitlessEvent, len(starts))
	for i, k := range starts {
		out[i] = gitlessEvent{Worktree: k.worktree, Start: k.start, End: ends[k], record: f.Name()}
	}
	return out, nil
}

// gitlessDirs are where the record of a repository whose top is top may
// be: the session's state directory, and the default state directory of
// top and of every directory above it (a worktree opened earlier that
// held top, whose sessions wrote their record there).
func gitlessDirs(stateDir, top string) []string {
	dirs := []string{stateDir}
	for d := top; ; d = filepath.Dir(d) {
		if sd, err := DefaultStateDir(d); err == nil && !slices.Contains(dirs, sd) {
			dirs = append(dirs, sd)
		}
		if d == filepath.Dir(d) {
			return dirs
		}
	}
}

// madeWhileGitless returns why the repository at top, whose git directory
// is gitDir, vouches for nothing: its ".git" (the directory, or the file
// that names gitDir) or gitDir was made while servers ran in a worktree
// with no repository that holds top, or when it was made cannot be told
// while they did. "" when it vouches.
func madeWhileGitless(stateDir, top, gitDir string) (string, error) {
	var windows []gitlessEvent
	for _, dir := range gitlessDirs(stateDir, top) {
		w, err := gitlessWindows(dir, top)
		if err != nil {
			return "", err
		}
		windows = append(windows, w...)
	}
	if len(windows) == 0 {
		return "", nil
	}
	for _, p := range []string{filepath.Join(top, ".git"), gitDir} {
		born, ok := birthTime(p)
		if !ok {
			return fmt.Sprintf("servers ran in %s while it was in no repository (from %s, recorded in %s), and when %s was made cannot be told here, so a server could have made it", windows[0].Worktree, stamp(windows[0].Start), windows[0].record, p), nil
		}
		for _, w := range windows {
			// A file system stamps files with the kernel's coarse clock,
			// up to a tick (1 to 10 ms) behind the time the window was
			// read from: the window is widened by gitlessSlack each way,
			// so that what is made in it never stamps as before or after.
			b := born.UnixNano()
			if b >= w.Start-int64(gitlessSlack) && (w.End == 0 || b <= w.End+int64(gitlessSlack)) {
				until := "a session that did not say it ended"
				if w.End != 0 {
					until = stamp(w.End)
				}
				return fmt.Sprintf("%s was made at %s, while servers ran in %s with no repository (from %s to %s, recorded in %s), so a server could have made it", p, stamp(b), w.Worktree, stamp(w.Start), until, w.record), nil
			}
		}
	}
	return "", nil
}

// gitlessSlack widens each window: five ticks of the slowest kernel clock
// (HZ 100).
const gitlessSlack = 50 * time.Millisecond

func stamp(ns int64) string { return time.Unix(0, ns).Format(time.RFC3339) }
