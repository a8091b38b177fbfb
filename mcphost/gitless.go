package mcphost

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A worktree in no git repository has no .git for the sandbox to keep
// read-only, so a server can make one (git init, at the top or in any
// directory of the worktree, or a .git file naming a repository elsewhere)
// and commit a lock there, which would then vouch for itself. So each
// session that starts servers in such a worktree (or with a write grant on
// such a directory) writes, to the person's state directory (which no
// server can reach), when it began and when it ended, unless the record
// holds that directory (or one above it) already; a repository at or
// within a directory so recorded vouches for nothing, until the person,
// who made it, removes the record. When a repository was made cannot be
// told: renaming an older directory to .git keeps its birth time.

// gitlessLog is the record's file in the state directory: one JSON object
// a line, appended (O_APPEND, so that sessions running at once do not lose
// each other's lines).
const gitlessLog = "servers-without-git.log"

// maxGitlessLog bounds the record's reading: a session adds two lines of
// about 150 bytes for each directory in no repository that it finds not
// recorded yet (recorded, it adds none: see Connect), so the record grows
// with the directories, not the sessions. Past it the record cannot be
// read whole, and no repository a server could have made vouches.
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
// submodule): git would find no repository for it. One that cannot be
// looked at (no permission) counts as none: recording is the safe side.
func inNoRepository(worktree string) bool {
	for d := worktree; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// recordGitless appends ev to the record in dir, as a line of its own
// (appendRecord).
func recordGitless(dir string, ev gitlessEvent) error {
	return appendRecord(filepath.Join(dir, gitlessLog), ev)
}

// gitlessWindows returns, from the record in dir, the windows recorded
// (by the first session there; see Connect) in which servers ran, in a
// worktree that was in no repository, where top lies (top is at or within
// that worktree), each with its End (0: the session did not say it ended,
// as when it was killed).
func gitlessWindows(dir, top string) ([]gitlessEvent, error) {
	record := filepath.Join(dir, gitlessLog)
	type key struct {
		worktree string
		start    int64
	}
	ends := map[key]int64{}
	var starts []key
	err := readRecord(record, maxGitlessLog, func(line []byte) {
		var ev gitlessEvent
		if json.Unmarshal(line, &ev) != nil || !under(top, ev.Worktree) {
			return // a line cut by a crash, or another worktree's
		}
		// A window is known from either of its lines: one may be torn.
		k := key{ev.Worktree, ev.Start}
		if _, seen := ends[k]; !seen {
			starts = append(starts, k)
			ends[k] = 0
		}
		if ev.End != 0 {
			ends[k] = ev.End
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]gitlessEvent, len(starts))
	for i, k := range starts {
		out[i] = gitlessEvent{Worktree: k.worktree, Start: k.start, End: ends[k], record: record}
	}
	return out, nil
}

// gitlessHeld reports whether the record in dir holds root (a window at
// root or a directory above it); a record that cannot be read holds
// nothing, so that the session records again.
func gitlessHeld(dir, root string) bool {
	w, err := gitlessWindows(dir, root)
	return err == nil && len(w) > 0
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

// madeWhileGitless returns why the repository at top vouches for nothing:
// servers ran in a directory that holds it while that directory was in no
// repository, so one of them could have made it. "" when it vouches.
func madeWhileGitless(stateDir, top string) (string, error) {
	for _, dir := range gitlessDirs(stateDir, top) {
		windows, err := gitlessWindows(dir, top)
		if err != nil {
			return "", err
		}
		if len(windows) > 0 {
			w := windows[0]
			return fmt.Sprintf("servers ran in %s while it was in no repository (from %s on, recorded in %s), so one of them could have made this one", w.Worktree, stamp(w.Start), w.record), nil
		}
	}
	return "", nil
}

func stamp(ns int64) string { return time.Unix(0, ns).Format(time.RFC3339) }

// gitlessCandidates are the roots servers can write: the worktree and
// every server's write grants, resolved (a grant that cannot be expanded
// fails its server's start, and grants nothing).
func (s *Session) gitlessCandidates() []string {
	roots := []string{s.worktree}
	for _, name := range s.order {
		w, err := s.expand(name, "write", s.servers[name].cfg.Write)
		if err != nil {
			continue
		}
		for _, p := range w {
			if c, err := filepath.EvalSymlinks(p); err == nil {
				p = c
			}
			if !slices.Contains(roots, p) {
				roots = append(roots, p)
			}
		}
	}
	return roots
}
