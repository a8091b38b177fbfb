package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// specMagic starts every spec the host sends to the helper, so that a
// program started as the helper by mistake fails at once instead of
// misreading whatever its fd 3 happens to be.
const specMagic = "mcphost-sandbox-spec/1\n"

// maxSpecLen bounds a spec; real ones are a few kilobytes.
const maxSpecLen = 1 << 20

// spec is what the host tells the helper: everything is decided and
// resolved on the host, so the helper only checks that it is well formed
// and applies it.
type spec struct {
	// Probe asks the helper to set up every confinement layer on itself
	// and report, without starting a server.
	Probe bool `json:"probe,omitempty"`
	// Off runs the server without confinement (Config.Off).
	Off bool `json:"off,omitempty"`
	// Path is the executable the helper execs, absolute.
	Path string `json:"path,omitempty"`
	// Argv is the server's argument vector; Argv[0] is passed as given.
	Argv []string `json:"argv,omitempty"`
	// Env is the server's complete environment.
	Env []string `json:"env,omitempty"`
	// Dir is the server's working directory.
	Dir string `json:"dir,omitempty"`
	// Reduced confines the server without namespaces (the host may not
	// create a user namespace): Landlock, seccomp and no_new_privs only.
	Reduced bool `json:"reduced,omitempty"`
	// Network leaves the host's network reachable.
	Network bool `json:"network,omitempty"`
	// Proxy, when not 0, is the port on which the helper listens, on the
	// loopback of the server's network namespace, for the host's proxy
	// (Config.Proxy); the listening socket goes to the host over the
	// socket at descriptor helperProxyFD.
	Proxy int `json:"proxy,omitempty"`
	// Direct, with a Proxy whose Config.Proxy is a DirectProxy, is what
	// the helper also sets up for clients that ignore the proxy: the
	// listeners (sent to the host with the proxy's), the loopback's
	// prefixes and the stub resolv.conf.
	Direct *directSpec `json:"direct,omitempty"`
	// MaxABI, when positive, makes the helper use at most this Landlock
	// ABI (tests use it to exercise the paths for older kernels).
	MaxABI int `json:"max_abi,omitempty"`
	// Hide lists directories the server sees empty and read-only unless a
	// grant shows them (the home directory, /tmp): in the server's new
	// root they are made as empty directories. Every other path that is
	// not granted does not exist there at all.
	Hide []string `json:"hide,omitempty"`
	// Links are the symbolic links made in the new root, path to target:
	// the system paths that are links on the host (/bin -> usr/bin).
	Links map[string]string `json:"links,omitempty"`
	// Read lists files and directories the server may read and execute.
	Read []string `json:"read,omitempty"`
	// Write lists directories and files the server may read, write,
	// execute, create in and remove from.
	Write []string `json:"write,omitempty"`
	// Protect lists existing paths inside Write that are made read-only
	// and immovable.
	Protect []string `json:"protect,omitempty"`
	// RunAs, when not zero, is the user and group ID the server runs as
	// (ServerID, for a root host); 0 keeps the helper's own.
	RunAs uint32 `json:"run_as,omitempty"`
	// Home, when not empty, is where the server sees HomeSource, a
	// directory of the host's, writable: the path of its HOME. Mounts the
	// plan puts beneath Home are made read-only unless they lie in a
	// Write path.
	Home       string `json:"home,omitempty"`
	HomeSource string `json:"home_source,omitempty"`
	// HomeSize, when positive, makes the private home a tmpfs of at most
	// this many bytes at Home instead of HomeSource bound there (a
	// temporary home, Config.TempHome, in the full tier).
	HomeSize int64 `json:"home_size,omitempty"`
	// Idmap lists granted paths that the helper binds from the idmapped
	// mount trees the host sends with the spec (SCM_RIGHTS, in this order,
	// at most maxIdmap), instead of from its own view of the host's tree.
	Idmap []string `json:"idmap,omitempty"`
	// Root says the host built the server's new root (hostRoot) and sends
	// it with the spec, as a detached mount tree, before any idmapped
	// tree; it has those attached already, so Idmap is empty.
	Root bool `json:"root,omitempty"`

	// Cgroups are the server's cgroup directories. With CgroupsSelf
	// (cgroup v1) the thread of the helper that starts the server joins
	// them for the fork (each tasks file, opened before the new root), so
	// the server is born in them and the helper stays out. Otherwise (v2,
	// where one process's threads share their cgroups) the host moves the
	// helper into them right after starting it (beside the helper's own
	// start: the move waits for an RCU grace period) and then writes
	// cgroupJoined on the spec socket; the helper does not start the
	// server before it has read that byte.
	Cgroups     []string `json:"cgroups,omitempty"`
	CgroupsSelf bool     `json:"cgroups_self,omitempty"`
	// Trace asks the helper for its timestamps in the Started report
	// (MCPHOST_START_TRACE).
	Trace bool `json:"trace,omitempty"`
	// NProc and Data, when positive, are the RLIMIT_NPROC and RLIMIT_DATA
	// the server starts with (where no cgroup enforces Limits).
	NProc int   `json:"nproc,omitempty"`
	Data  int64 `json:"data,omitempty"`
	// FileSize, when positive, is the RLIMIT_FSIZE the server starts
	// with, in both tiers: no file it writes grows past it.
	FileSize int64 `json:"file_size,omitempty"`
	// SigPending, MemLock, MsgQueue and NoFile, when positive, bound the
	// server's RLIMIT_SIGPENDING, RLIMIT_MEMLOCK, RLIMIT_MSGQUEUE and
	// RLIMIT_NOFILE (full tier; setKernelBudgets). They only lower: a limit
	// the helper has below one of them stays.
	SigPending int64 `json:"sigpending,omitempty"`
	MemLock    int64 `json:"memlock,omitempty"`
	MsgQueue   int64 `json:"msgqueue,omitempty"`
	NoFile     int64 `json:"nofile,omitempty"`
	// UserNSLimits are values the helper writes to /proc/sys/user/NAME
	// in the server's own user namespace (names of userNSLimitNames):
	// the kernel's per-namespace caps on inotify and fanotify, which
	// count every process of the namespace. Only a helper in a user
	// namespace of its own may have them: elsewhere they would be the
	// machine's.
	UserNSLimits map[string]int64 `json:"userns_limits,omitempty"`
	// Tmp is the server's TMPDIR, one of Write, which the helper mounts
	// as a tmpfs of TmpSize bytes instead of binding it; /dev/shm gets
	// the same size.
	Tmp     string `json:"tmp,omitempty"`
	TmpSize int64  `json:"tmp_size,omitempty"`

	// idmapFiles are those trees, on the host's side.
	idmapFiles []*os.File
	// rootFile is the new root the host built (Root), on its side.
	rootFile *os.File
	// proxy serves the connections to the proxy port, on the host's side.
	proxy Proxy
	// lease, on a root host, holds the server's uid (RunAs) until the
	// helper reports the server alone, or is gone.
	lease *serverIDLease
}

// encodeSpec returns the bytes the host writes to the helper's spec socket.
func encodeSpec(s *spec) ([]byte, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(body) > maxSpecLen {
		return nil, fmt.Errorf("spec is %d bytes, more than the %d allowed", len(body), maxSpecLen)
	}
	var buf bytes.Buffer
	buf.WriteString(specMagic)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(body)))
	buf.Write(n[:])
	buf.Write(body)
	return buf.Bytes(), nil
}

// errBadSpec is wrapped by every error of decodeSpec.
var errBadSpec = errors.New("bad sandbox spec")

// decodeSpec reads one spec from r, leaving r positioned after it (the
// host keeps the socket open as a lifeline and the helper reads on to see it
// close), and checks it.
func decodeSpec(r io.Reader) (*spec, error) {
	head := make([]byte, len(specMagic)+4)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, fmt.Errorf("%w: reading header: %v", errBadSpec, err)
	}
	if string(head[:len(specMagic)]) != specMagic {
		return nil, fmt.Errorf("%w: missing magic (was this program started by sandbox.Start?)", errBadSpec)
	}
	n := binary.BigEndian.Uint32(head[len(specMagic):])
	if n > maxSpecLen {
		return nil, fmt.Errorf("%w: length %d exceeds %d", errBadSpec, n, maxSpecLen)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", errBadSpec, err)
	}
	var s spec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSpec, err)
	}
	// Not dec.More: it is false before a stray closing bracket.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the spec", errBadSpec)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadSpec, err)
	}
	return &s, nil
}

// check reports whether s is complete and all its paths are canonical.
func (s *spec) check() error {
	if s.Probe && s.Off {
		return errors.New("probe and off together")
	}
	if s.Reduced && (s.Off || len(s.Hide) > 0 || len(s.Links) > 0 || len(s.Idmap) > 0 || len(s.Cgroups) > 0 || s.Tmp != "" || len(s.Protect) > 0 || len(s.UserNSLimits) > 0) {
		return errors.New("reduced with namespaces' settings")
	}
	if s.Root && (s.Off || s.Reduced || len(s.Idmap) > 0) {
		return errors.New("root with off, reduced or idmap")
	}
	if s.CgroupsSelf && (len(s.Cgroups) == 0 || s.Off || s.Reduced) {
		return errors.New("cgroups_self without cgroups of a confined server")
	}
	if !s.Probe {
		if !isCanonical(s.Path) {
			return fmt.Errorf("path %q is not a clean absolute path", s.Path)
		}
		if len(s.Argv) == 0 {
			return errors.New("empty argv")
		}
		if !isCanonical(s.Dir) {
			return fmt.Errorf("dir %q is not a clean absolute path", s.Dir)
		}
		for _, a := range s.Argv {
			if strings.ContainsRune(a, 0) {
				return errors.New("argv contains a NUL byte")
			}
		}
		for _, kv := range s.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || !validEnvName(k) || strings.ContainsRune(kv, 0) {
				return fmt.Errorf("bad environment entry %q", kv)
			}
		}
	}
	if s.NProc < 0 || s.Data < 0 || s.TmpSize < 0 || s.FileSize < 0 || s.HomeSize < 0 ||
		s.SigPending < 0 || s.MemLock < 0 || s.MsgQueue < 0 || s.NoFile < 0 {
		return errors.New("negative limit")
	}
	for name, v := range s.UserNSLimits {
		if !isUserNSLimit(name) || v <= 0 || v > 1<<31-1 {
			return fmt.Errorf("user namespace limit %s = %d", name, v)
		}
	}
	if s.Tmp != "" && !isCanonical(s.Tmp) {
		return fmt.Errorf("tmp %q is not a clean absolute path", s.Tmp)
	}
	if s.Proxy < 0 || s.Proxy > 65535 {
		return fmt.Errorf("proxy port %d out of range", s.Proxy)
	}
	if s.Proxy != 0 && (s.Network || s.Off || s.Reduced) {
		return errors.New("proxy with the host's network, unconfined or in the reduced tier")
	}
	if s.Direct != nil {
		if s.Proxy == 0 {
			return errors.New("direct network without a proxy")
		}
		if err := s.Direct.check(); err != nil {
			return err
		}
	}
	if (s.Home == "") != (s.HomeSource == "") {
		return errors.New("home without home_source, or the other way round")
	}
	if s.Home != "" && (!isCanonical(s.Home) || s.Home == "/" || !isCanonical(s.HomeSource) || s.HomeSource == "/") {
		return fmt.Errorf("home %q or its source %q is not a clean absolute path other than /", s.Home, s.HomeSource)
	}
	if s.MaxABI < 0 {
		return fmt.Errorf("negative max_abi %d", s.MaxABI)
	}
	for l, target := range s.Links {
		if !isCanonical(l) || l == "/" {
			return fmt.Errorf("link path %q is not a clean absolute path", l)
		}
		if target == "" || strings.ContainsRune(target, 0) {
			return fmt.Errorf("link %s has a bad target %q", l, target)
		}
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"cgroups", s.Cgroups}, {"idmap", s.Idmap}, {"hide", s.Hide}, {"read", s.Read}, {"write", s.Write}, {"protect", s.Protect}} {
		for _, p := range list.paths {
			if !isCanonical(p) {
				return fmt.Errorf("%s path %q is not a clean absolute path", list.name, p)
			}
			if p == "/" && list.name != "read" {
				return fmt.Errorf("%s path is /", list.name)
			}
		}
	}
	return nil
}

// report is one message from the helper to the host, one JSON object per
// line on the report pipe. The first message is either Started or Error;
// after Started, at most one Exit follows.
type report struct {
	// Started says the server was exec'd (or, for a probe, that every
	// layer was applied); Confinement describes the layers.
	Started     bool   `json:"started,omitempty"`
	Confinement string `json:"confinement,omitempty"`
	// Error says the helper gave up before the server ran, and why.
	Error string `json:"error,omitempty"`
	// Unsupported marks an Error caused by what the kernel refuses to do
	// (as opposed to, say, a missing executable).
	Unsupported bool `json:"unsupported,omitempty"`
	// Linked marks an Error caused by a granted path that the helper
	// found to be a symbolic link (ELOOP, opening it refusing links)
	// where the host had checked a real one: someone swapped it in.
	Linked bool `json:"linked,omitempty"`
	// Exit is how the server ended, in the words of os.ProcessState.
	Exit string `json:"exit,omitempty"`
	// Alone, with Exit, says every other process of the server is gone
	// and reaped: the server is done even though the helper still has to
	// exit.
	Alone bool `json:"alone,omitempty"`
	// Trace, when the spec asked, are the helper's timestamps
	// (CLOCK_MONOTONIC), decimal, separated by spaces: with Started its
	// start's (helperTrace), with Exit its close's (see traceMarks).
	Trace string `json:"trace,omitempty"`
}

// maxReportLen bounds one report line.
const maxReportLen = 64 << 10

// encodeReport returns r as one line.
func encodeReport(r report) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// A report holds only strings and booleans.
		panic(err)
	}
	return append(b, '\n')
}

// parseReport parses one report line (without its newline) and checks that
// it is exactly one kind of message.
func parseReport(line []byte) (report, error) {
	var r report
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return report{}, fmt.Errorf("bad helper report: %v", err)
	}
	// Not dec.More: it is false before a stray closing bracket.
	if _, err := dec.Token(); err != io.EOF {
		return report{}, errors.New("bad helper report: trailing data")
	}
	kinds := 0
	for _, b := range []bool{r.Started, r.Error != "", r.Exit != ""} {
		if b {
			kinds++
		}
	}
	if kinds != 1 {
		return report{}, errors.New("bad helper report: not exactly one of started, error, exit")
	}
	if r.Unsupported && r.Error == "" {
		return report{}, errors.New("bad helper report: unsupported without error")
	}
	if r.Alone && r.Exit == "" {
		return report{}, errors.New("bad helper report: alone without exit")
	}
	return r, nil
}

// readReport reads the next report line from br.
func readReport(br *bufio.Reader) (report, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return report{}, err
		}
		line = append(line, chunk...)
		if len(line) > maxReportLen {
			return report{}, fmt.Errorf("bad helper report: longer than %d bytes", maxReportLen)
		}
		if !isPrefix {
			break
		}
	}
	return parseReport(line)
}
