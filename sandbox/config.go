package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
)

// invalidConfig wraps err, a problem with the Config of server name.
func invalidConfig(name string, err error) error {
	return fmt.Errorf("%w: server %q: %w", ErrInvalidConfig, name, err)
}

// checkConfig checks what can be checked of cfg without touching the
// filesystem.
func checkConfig(cfg *Config) error {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return errors.New("empty command")
	}
	for _, a := range cfg.Argv {
		if err := checkNoNUL("command argument", a); err != nil {
			return err
		}
	}
	if err := checkAbsPath("worktree", cfg.Worktree); err != nil {
		return err
	}
	if cfg.Home != "" {
		if cfg.TempHome {
			return errors.New("both a home directory and a temporary one")
		}
		if err := checkAbsPath("home directory", cfg.Home); err != nil {
			return err
		}
	}
	for _, p := range cfg.Read {
		if err := checkAbsPath("read path", p); err != nil {
			return err
		}
	}
	for _, p := range cfg.Write {
		if err := checkAbsPath("write path", p); err != nil {
			return err
		}
	}
	for _, p := range cfg.Protect {
		if err := checkAbsPath("protect path", p); err != nil {
			return err
		}
	}
	for _, n := range cfg.EnvPass {
		if !validEnvName(n) {
			return fmt.Errorf("env_pass name %q is not a valid variable name", n)
		}
	}
	return nil
}

// checkNoNUL reports an error if s, the value of what, contains a NUL byte.
func checkNoNUL(what, s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%s %q contains a NUL byte", what, s)
		}
	}
	return nil
}

// tempPrefix turns a server name into something safe in a file name.
func tempPrefix(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name) && len(b) < 32; i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b = append(b, c)
		}
	}
	if len(b) == 0 {
		return "server"
	}
	return string(b)
}

// canonicalExisting resolves each absolute path through symbolic links,
// dropping the ones that do not exist, and removes duplicates.
func canonicalExisting(paths []string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		c, err := filepath.EvalSymlinks(p)
		if err != nil || seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, c)
	}
	return out
}
