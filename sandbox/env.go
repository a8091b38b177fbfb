package sandbox

import (
	"fmt"
	"sort"
	"strings"
)

// passedByDefault reports whether the host variable name reaches a server
// without being named in Config.EnvPass. The list is short on purpose: every
// name here is something a program needs to behave normally (find programs,
// pick a locale, format time) and none of them usually carries a secret.
func passedByDefault(name string) bool {
	switch name {
	case "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "SHELL":
		return true
	}
	return passedOnThisOS(name)
}

// validEnvName reports whether name can be an environment variable name:
// non-empty, without '=' (which would split it) and without NUL (which would
// cut it short in the kernel's copy).
func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

// buildEnv returns the scrubbed environment of a server, sorted by name:
// the allowlisted variables and the pass names found in host, then set
// (which wins over both), then the temporary directory variables.
//
// When host names a variable more than once the last value wins, as it does
// for os/exec. Entries of host without '=' are ignored: they cannot be
// assigned and the kernel would pass them verbatim.
func buildEnv(host []string, pass []string, set map[string]string, tmp string) ([]string, error) {
	hostVars := make(map[string]string, len(host))
	for _, kv := range host {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validEnvName(k) {
			continue
		}
		hostVars[k] = v
	}
	env := make(map[string]string)
	for k, v := range hostVars {
		if passedByDefault(k) {
			env[k] = v
		}
	}
	for _, k := range pass {
		if !validEnvName(k) {
			return nil, fmt.Errorf("env_pass name %q is not a valid variable name", k)
		}
		if v, ok := hostVars[k]; ok {
			env[k] = v
		}
	}
	for k, v := range set {
		if !validEnvName(k) {
			return nil, fmt.Errorf("env name %q is not a valid variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env value of %s contains a NUL byte", k)
		}
		env[k] = v
	}
	// The temporary directory variables override anything the host or
	// Config.Env says, so that a server's temporary files land where Close
	// removes them.
	for _, k := range [...]string{"TMPDIR", "TMP", "TEMP"} {
		env[k] = tmp
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// envValue returns the value of name in env (a list of "k=v"), the last one
// if there are several, and whether it was present.
func envValue(env []string, name string) (string, bool) {
	var val string
	var found bool
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			val, found = v, true
		}
	}
	return val, found
}

// setEnv returns env (sorted "k=v" entries, as buildEnv makes) with name
// set to value, replacing every earlier entry of name.
func setEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, name+"="+value)
	sort.Strings(out)
	return out
}
