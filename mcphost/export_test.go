package mcphost

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/mcphost/mcphost/pin"
)

// FixtureBin returns the path of the test fixture server (testdata/fixture),
// built by TestMain, for the examples of package mcphost_test.
func FixtureBin() string { return fixtureBin }

// approve reviews refs and records what was shown, as
// `mcphost approve -yes` does.
func approve(s *Session, refs ...string) error {
	rs, err := s.Review(context.Background(), refs...)
	if err != nil {
		return err
	}
	return s.Approve(context.Background(), rs...)
}

// reviewOf returns the text and pin of the one review ref names.
func reviewOf(s *Session, ref string) (string, PinStatus, error) {
	rs, err := s.Review(context.Background(), ref)
	if err != nil {
		return "", "", err
	}
	if len(rs) != 1 {
		return "", "", fmt.Errorf("%s: %d reviews", ref, len(rs))
	}
	return rs[0].Text, rs[0].Pin, nil
}

// loadLock reads and trusts a lock as a session of servers under opts
// would.
func loadLock(ctx context.Context, path string, servers []ServerConfig, opts Options) (*pin.Lock, error) {
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return nil, err
	}
	return lf.load(ctx)
}

// acceptLock records data as the lock's content this person trusts.
func acceptLock(path string, data []byte, servers []ServerConfig, opts Options) error {
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return err
	}
	return lf.accept(pin.DigestBytes(data))
}

// programIdentityOf is programIdentity under opts' worktree.
func programIdentityOf(sc ServerConfig, opts Options) ([]pin.ProgramFile, error) {
	wt, err := filepath.Abs(opts.Worktree)
	if err == nil {
		wt, err = filepath.EvalSymlinks(wt)
	}
	if err != nil {
		return nil, err
	}
	opts.Worktree = wt
	writable, err := writablePaths([]ServerConfig{sc}, opts)
	if err != nil {
		return nil, err
	}
	return programIdentity(sc, wt, opts.HostEnv, writable, opts.StateDir)
}
