// Command hostile is the fixture server of the sandbox tests: it tries, on
// request, everything a hostile MCP server would try, and reports what
// happened. It uses only the standard library.
//
// Usage:
//
//	hostile                 serve requests on stdin (the default)
//	hostile exit N          exit with status N at once
//	hostile daemon FILE     setsid, fork again, and leave a grandchild that
//	                        appends a line to FILE every 10ms forever
//	hostile beat FILE       append a line to FILE every 10ms forever
//	hostile alloc N         allocate and touch N MiB, print how many, exit
//	hostile addkey DESC     add a "user" key DESC to the user keyring, for
//	                        two minutes, and print its id
//	hostile cat FILE        print FILE
//
// The request "child FILE [setsid]" leaves a beating child that stays the
// server's (in a session of its own with "setsid").
//
// Each request is one JSON line {"op": "...", "args": [...]}; each reply is
// one JSON line {"ok": bool, "out": "...", "err": "...", "errno": "EACCES"}.
// On EOF of stdin it exits 0, unless told to "linger".
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

type request struct {
	Op   string   `json:"op"`
	Args []string `json:"args"`
}

type reply struct {
	OK    bool   `json:"ok"`
	Out   string `json:"out,omitempty"`
	Err   string `json:"err,omitempty"`
	Errno string `json:"errno,omitempty"`
}

func main() {
	if len(os.Args) >= 3 {
		switch os.Args[1] {
		case "exit":
			n, _ := strconv.Atoi(os.Args[2])
			os.Exit(n)
		case "daemon":
			daemon(os.Args[2])
			return
		case "beat":
			beat(os.Args[2])
			return
		case "alloc":
			n, _ := strconv.Atoi(os.Args[2])
			kept = alloc(n)
			fmt.Println(len(kept))
			return
		case "addkey":
			id, err := addKey(os.Args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, "addkey:", err)
				os.Exit(1)
			}
			fmt.Println(id)
			return
		case "inotify-count":
			// How many inotify instances of up to N this user can
			// open (the person's editor, beside a server).
			n, _ := strconv.Atoi(os.Args[2])
			got, err := holdInotify(n)
			fmt.Println(got, err)
			return
		case "cat":
			b, err := os.ReadFile(os.Args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Stdout.Write(b)
			return
		}
	}
	serve()
}

func serve() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), 1<<20)
	out := json.NewEncoder(os.Stdout)
	linger := false
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			out.Encode(fail(err))
			continue
		}
		if req.Op == "linger" {
			linger = true
			out.Encode(reply{OK: true})
			continue
		}
		out.Encode(do(req))
	}
	if linger {
		for {
			time.Sleep(time.Hour)
		}
	}
}

func fail(err error) reply {
	r := reply{Err: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.Errno = errnoName(errno)
	}
	return r
}

func result(out string, err error) reply {
	if err != nil {
		return fail(err)
	}
	return reply{OK: true, Out: out}
}

func arg(req request, i int) string {
	if i < len(req.Args) {
		return req.Args[i]
	}
	return ""
}

func do(req request) reply {
	a0, a1 := arg(req, 0), arg(req, 1)
	switch req.Op {
	case "write":
		return result("", os.WriteFile(a0, []byte("hostile\n"), 0o644))
	case "append":
		f, err := os.OpenFile(a0, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fail(err)
		}
		_, err = f.WriteString("hostile\n")
		f.Close()
		return result("", err)
	case "read":
		b, err := os.ReadFile(a0)
		return result(string(b), err)
	case "parent-environ":
		// The environment of the process that started it (the helper).
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getppid()))
		return result(string(b), err)
	case "wait-file":
		// Wait, at most 5s, until the file a0 exists.
		for i := 0; i < 500; i++ {
			if _, err := os.Stat(a0); err == nil {
				return result("", nil)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return fail(fmt.Errorf("%s did not appear", a0))
	case "suid":
		// A set-user-ID copy of a0 at a1, made both ways: chmod after
		// creating, and open(O_CREAT) with the mode.
		b, err := os.ReadFile(a0)
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(a1, b, 0o755); err != nil {
			return fail(err)
		}
		// The control: a plain chmod of the same file works, so a
		// refusal below is of the set-user-ID bit.
		if err := syscall.Chmod(a1, 0o700); err != nil {
			return fail(fmt.Errorf("plain chmod: %w", err))
		}
		if err := syscall.Chmod(a1, 0o4755); err != nil {
			return fail(fmt.Errorf("set-user-ID chmod: %w", err))
		}
		return result("", nil)
	case "create-sgid":
		fd, err := syscall.Open(a0, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o2755)
		if err != nil {
			return fail(err)
		}
		syscall.Close(fd)
		st, _ := os.Stat(a0)
		if st.Mode()&os.ModeSetgid == 0 {
			return fail(fmt.Errorf("created without the bit: %v", st.Mode()))
		}
		return result("", nil)
	case "prlimit-parent":
		// Take all descriptors from the process that started it (the
		// helper): prlimit64(ppid, RLIMIT_NOFILE, {0, 0}, NULL).
		lim := [2]uint64{0, 0}
		_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(os.Getppid()), syscall.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
		return errnoResult(e)
	case "signal-parent":
		// Signal 0 to its parent: the permission check of a signal,
		// without the signal.
		return result("", syscall.Kill(os.Getppid(), 0))
	case "renice-parent":
		return result("", syscall.Setpriority(syscall.PRIO_PROCESS, os.Getppid(), 19))
	case "stat":
		st, err := os.Lstat(a0)
		if err != nil {
			return fail(err)
		}
		return result(fmt.Sprintf("%v %d", st.Mode(), st.Size()), nil)
	case "readdir":
		ents, err := os.ReadDir(a0)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return result(strings.Join(names, "\n"), err)
	case "mkdir":
		return result("", os.Mkdir(a0, 0o755))
	case "rename":
		return result("", os.Rename(a0, a1))
	case "remove":
		return result("", os.Remove(a0))
	case "truncate":
		return result("", os.Truncate(a0, 0))
	case "chmod":
		// A mode change without world write (the filter refuses that
		// itself): what a read-only mount must refuse.
		return result("", os.Chmod(a0, 0o755))
	case "chmod-mode", "fchmod":
		// chmod(2) (fchmodat) or fchmod(2) of a0 to the octal mode a1.
		mode, err := strconv.ParseUint(a1, 8, 32)
		if err != nil {
			return fail(err)
		}
		if req.Op == "chmod-mode" {
			return result("", syscall.Chmod(a0, uint32(mode)))
		}
		fd, err := syscall.Open(a0, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fail(err)
		}
		defer syscall.Close(fd)
		return result("", syscall.Fchmod(fd, uint32(mode)))
	case "umask-create":
		// Clear the umask, then create the file a0 (0666) and the
		// directory a1 (0777); fail if either ends up world-writable.
		old := syscall.Umask(0)
		fd, err := syscall.Open(a0, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o666)
		if err != nil {
			return fail(err)
		}
		syscall.Close(fd)
		if err := syscall.Mkdir(a1, 0o777); err != nil {
			return fail(err)
		}
		var out []string
		for _, p := range []string{a0, a1} {
			st, err := os.Stat(p)
			if err != nil {
				return fail(err)
			}
			if st.Mode().Perm()&0o002 != 0 {
				return fail(fmt.Errorf("%s was created world-writable: %v", p, st.Mode()))
			}
			out = append(out, fmt.Sprintf("%o", st.Mode().Perm()))
		}
		return result(fmt.Sprintf("umask said %03o; modes %s", old, strings.Join(out, " ")), nil)
	case "umask-flood":
		// a0 threads call umask(0) in a loop until the server exits, each
		// call a notification the helper answers; out is how many were
		// answered in the first 100ms.
		n, err := strconv.Atoi(a0)
		if err != nil {
			return result("", err)
		}
		var calls atomic.Int64
		for range n {
			go func() {
				runtime.LockOSThread()
				for {
					syscall.Syscall(syscall.SYS_UMASK, 0, 0, 0)
					calls.Add(1)
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		return result(strconv.FormatInt(calls.Load(), 10), nil)
	case "umask":
		// Set the umask to the octal a0 and back: out is what it was.
		mask, err := strconv.ParseUint(a0, 8, 32)
		if err != nil {
			return fail(err)
		}
		old := syscall.Umask(int(mask))
		syscall.Umask(old)
		return result(fmt.Sprintf("%03o", old), nil)
	case "acl-other-write":
		// Give other users write through a POSIX ACL, chmod's other door:
		// user::rw-, group::r--, other::rw- (system.posix_acl_access).
		return result("", syscall.Setxattr(a0, "system.posix_acl_access", aclOtherWrite(), 0))
	case "setxattr":
		return result("", syscall.Setxattr(a0, "user.mcphost", []byte("hostile"), 0))
	case "setpriority", "getpriority", "ioprio-set", "ioprio-get":
		// The call with which a0 and who a1 (and prio a2 for the setters),
		// numbers: which process, process group or user it acts on.
		which, _ := strconv.Atoi(a0)
		who, _ := strconv.Atoi(a1)
		prio, _ := strconv.Atoi(arg(req, 2))
		nr := map[string]uintptr{
			"setpriority": syscall.SYS_SETPRIORITY, "getpriority": syscall.SYS_GETPRIORITY,
			"ioprio-set": syscall.SYS_IOPRIO_SET, "ioprio-get": syscall.SYS_IOPRIO_GET,
		}[req.Op]
		r, _, e := syscall.RawSyscall(nr, uintptr(which), uintptr(who), uintptr(prio))
		if e != 0 {
			return fail(e)
		}
		return result(strconv.Itoa(int(r)), nil)
	case "inotify":
		// Watch the directory a0 for new entries.
		fd, err := inotifyInit()
		if err != nil {
			return fail(fmt.Errorf("inotify_init1: %w", err))
		}
		defer syscall.Close(fd)
		_, err = syscall.InotifyAddWatch(fd, a0, syscall.IN_CREATE)
		return result("", err)
	case "inotify-hold":
		// Open up to N inotify instances and keep them open for the
		// rest of this process's life: how many it got, and why no
		// more.
		n, _ := strconv.Atoi(a0)
		got, err := holdInotify(n)
		return result(strconv.Itoa(got), err)
	case "sigqueue":
		// Queue up to N real-time signals (with sigqueue, as a program
		// queues work) to a stopped child, which keeps them pending:
		// how many were queued, and why no more. The child stays.
		n, _ := strconv.Atoi(a0)
		c := exec.Command("/bin/sleep", "600")
		if err := c.Start(); err != nil {
			return fail(err)
		}
		stopped = append(stopped, c)
		c.Process.Signal(syscall.SIGSTOP)
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(c.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
			return fail(fmt.Errorf("stopping the child: %v (%v)", err, ws))
		}
		var info [128]byte // siginfo_t: signo, errno, code (SI_QUEUE), pid, uid
		*(*int32)(unsafe.Pointer(&info[0])) = 34 + 2
		*(*int32)(unsafe.Pointer(&info[8])) = -1
		*(*int32)(unsafe.Pointer(&info[12])) = int32(os.Getpid())
		*(*uint32)(unsafe.Pointer(&info[16])) = uint32(os.Getuid())
		got := 0
		var err error
		for ; got < n; got++ {
			if _, _, e := syscall.Syscall(syscall.SYS_RT_SIGQUEUEINFO, uintptr(c.Process.Pid), 34+2, uintptr(unsafe.Pointer(&info[0]))); e != 0 {
				err = fmt.Errorf("rt_sigqueueinfo after %d: %w", got, e)
				break
			}
		}
		return result(strconv.Itoa(got), err)
	case "xfsz":
		// Take SIGXFSZ's default action back from Go's runtime (which
		// ignores it), as a C or Node program has it, then write the file
		// a0 past a1 MiB: the kernel ends this process.
		var act [4]uint64 // struct sigaction, all zero: SIG_DFL
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGXFSZ), uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0); e != 0 {
			return fail(e)
		}
		n, _ := strconv.Atoi(a1)
		return do(request{Op: "fill", Args: []string{a0, strconv.Itoa(n + 1)}})
	case "symlink":
		return result("", os.Symlink(a0, a1))
	case "exec":
		out, err := exec.Command(a0, req.Args[1:]...).CombinedOutput()
		if err != nil {
			// What the program said first is part of why it failed.
			first, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
			err = fmt.Errorf("%w: %s", err, first)
		}
		return result(string(out), err)
	case "fds":
		// The descriptors it inherited: the ones without close-on-exec
		// (whatever this program opens itself has it, as Go sets it).
		ents, err := os.ReadDir("/proc/self/fd")
		var fds []string
		for _, e := range ents {
			fd, _ := strconv.Atoi(e.Name())
			flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
			if errno != 0 || flags&syscall.FD_CLOEXEC != 0 {
				continue
			}
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			fds = append(fds, e.Name()+"="+target)
		}
		return result(strings.Join(fds, " "), err)
	case "env":
		return result(strings.Join(os.Environ(), "\n"), nil)
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		return result(string(b), err)
	case "pids":
		ents, err := os.ReadDir("/proc")
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, e.Name())
			}
		}
		return result(strings.Join(pids, " "), err)
	case "tcp":
		c, err := net.DialTimeout("tcp", a0, 3*time.Second)
		if err != nil {
			return fail(err)
		}
		_, err = c.Write([]byte("hostile\n"))
		c.Close()
		return result("", err)
	case "proxy-connect":
		// CONNECT a0 through the proxy $HTTPS_PROXY names, then a plain
		// GET of / in the tunnel: out is the tunnelled response's body.
		return proxyConnect(a0)
	case "fetch":
		// GET a0 with Go's net/http and the proxy of the environment.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		resp, err := client.Get(a0)
		if err != nil {
			return fail(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != 200 {
			return fail(fmt.Errorf("%s: %s", resp.Status, b))
		}
		return result(string(b), nil)
	case "get":
		// GET a0 with Go's net/http and no proxy at all: a client that
		// knows nothing of proxies, through the system's resolver.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
		resp, err := client.Get(a0)
		if err != nil {
			return fail(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return result(string(b), nil)
	case "listen-tcp":
		l, err := net.Listen("tcp", a0)
		if err != nil {
			return fail(err)
		}
		l.Close()
		return result("", nil)
	case "ttfb", "bulk":
		// Open a connection to a0 (through $HTTPS_PROXY when it is set and
		// a1 is not "direct", directly otherwise; a name is looked up each
		// time), GET / (ttfb) or /bulk (bulk), and read the
		// first byte of the answer (ttfb) or all of it (bulk): out is the
		// nanoseconds that took, then the bytes read.
		start := time.Now()
		c, br, err := dialTarget(a0, a1 == "direct")
		if err != nil {
			return fail(err)
		}
		defer c.Close()
		path := "/"
		if req.Op == "bulk" {
			path = "/bulk"
		}
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, a0)
		var n int64
		if req.Op == "ttfb" {
			if _, err := br.ReadByte(); err != nil {
				return fail(err)
			}
			n = 1
		} else if n, err = io.Copy(io.Discard, br); err != nil {
			return fail(err)
		}
		return result(fmt.Sprintf("%d %d", time.Since(start).Nanoseconds(), n), nil)
	case "lookup":
		// A name lookup with the resolver of the system.
		addrs, err := net.LookupHost(a0)
		return result(strings.Join(addrs, " "), err)
	case "udp":
		// A raw socket call, so that the failure shows where it happens.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			return fail(fmt.Errorf("socket: %w", err))
		}
		defer syscall.Close(fd)
		host, port, _ := net.SplitHostPort(a0)
		p, _ := strconv.Atoi(port)
		sa := &syscall.SockaddrInet4{Port: p}
		copy(sa.Addr[:], net.ParseIP(host).To4())
		return result("", syscall.Sendto(fd, []byte("hostile\n"), 0, sa))
	case "socket":
		// socket FAMILY TYPE PROTO, numbers.
		fam, _ := strconv.Atoi(a0)
		typ, _ := strconv.Atoi(a1)
		proto, _ := strconv.Atoi(arg(req, 2))
		fd, err := syscall.Socket(fam, typ, proto)
		if err == nil {
			syscall.Close(fd)
		}
		return result("", err)
	case "socketpair":
		fam, _ := strconv.Atoi(a0)
		typ, _ := strconv.Atoi(a1)
		proto, _ := strconv.Atoi(arg(req, 2))
		fds, err := syscall.Socketpair(fam, typ, proto)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
		}
		return result("", err)
	case "interfaces":
		// What os.networkInterfaces() and getifaddrs(3) do: RTM_GETLINK
		// and RTM_GETADDR over a NETLINK_ROUTE socket.
		ifs, err := net.Interfaces()
		if err != nil {
			return fail(err)
		}
		var out []string
		for _, i := range ifs {
			addrs, err := i.Addrs()
			if err != nil {
				return fail(err)
			}
			out = append(out, fmt.Sprintf("%s up=%v addrs=%d", i.Name, i.Flags&net.FlagUp != 0, len(addrs)))
		}
		return result(strings.Join(out, ","), nil)
	case "setlink-up":
		// A netlink write: RTM_NEWLINK setting IFF_UP on interface 1 (lo).
		return setLinkUp()
	case "unix":
		c, err := net.DialTimeout("unix", a0, 3*time.Second)
		if err != nil {
			return fail(err)
		}
		c.Close()
		return result("", nil)
	case "listen-unix":
		l, err := net.Listen("unix", a0)
		if err != nil {
			return fail(err)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return result("", nil)
	case "daemon":
		cmd := exec.Command("/proc/self/exe", "daemon", a0)
		if err := cmd.Run(); err != nil {
			return fail(err)
		}
		return result("", nil)
	case "child":
		// A child that beats a0 and stays the server's child: in the
		// server's process group, or with a1 "setsid" in a session of
		// its own (which leaves the group while its parent lives).
		cmd := exec.Command("/proc/self/exe", "beat", a0)
		if a1 == "setsid" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		return result("", cmd.Start())
	case "hold-stdout":
		// A child that keeps stdout (and stderr) open forever.
		cmd := exec.Command("/proc/self/exe", "beat", "/dev/null")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return result("", cmd.Start())
	case "trap":
		// On SIGTERM write a0 and exit 0; ignore SIGINT and SIGHUP.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
		go func() {
			<-c
			os.WriteFile(a0, []byte("term\n"), 0o644)
			os.Exit(0)
		}()
		return result("", nil)
	case "ignore-signals":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		return result("", nil)
	case "kill":
		pid, _ := strconv.Atoi(a0)
		sig, _ := strconv.Atoi(a1)
		return result("", syscall.Kill(pid, syscall.Signal(sig)))
	case "keyctl":
		// KEYCTL_GET_KEYRING_ID (0) of KEY_SPEC_USER_KEYRING (-4).
		neg4 := -4
		_, _, e := syscall.Syscall(syscall.SYS_KEYCTL, 0, uintptr(neg4), 0)
		return errnoResult(e)
	case "io_uring":
		var params [120]byte
		_, _, e := syscall.Syscall(425 /* io_uring_setup on amd64 and arm64 */, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		return errnoResult(e)
	case "userns":
		// A child in a new user namespace, where it would hold every
		// capability: clone(2) with CLONE_NEWUSER.
		cmd := exec.Command("/proc/self/exe", "exit", "0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return result("", cmd.Run())
	case "spawn":
		// Start up to N sleeping children (one task each); report how
		// many started and, if any failed, why. Then end them, so that
		// what follows has the slots again.
		n, _ := strconv.Atoi(a0)
		var children []*exec.Cmd
		var err error
		for i := 0; i < n && err == nil; i++ {
			c := exec.Command("/bin/sleep", "60")
			if err = c.Start(); err != nil {
				err = fmt.Errorf("after %d children: %w", i, err)
				break
			}
			children = append(children, c)
		}
		for _, c := range children {
			c.Process.Kill()
			c.Wait()
		}
		return result(strconv.Itoa(len(children)), err)
	case "fill":
		// Write N MiB to the file a0.
		n, _ := strconv.Atoi(a1)
		f, err := os.Create(a0)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		for i := 0; i < n; i++ {
			if _, err := f.Write(chunk); err != nil {
				return fail(fmt.Errorf("after %d MiB: %w", i, err))
			}
		}
		return result("", f.Sync())
	case "alloc":
		// Allocate and touch N MiB in this process and keep it.
		n, _ := strconv.Atoi(a0)
		kept = alloc(n)
		return result(strconv.Itoa(len(kept)), nil)
	case "ctty":
		// The device number of its controlling terminal (field 7 of
		// /proc/self/stat): 0 when it has none.
		b, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			return fail(err)
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 5 {
			return fail(errors.New("short /proc/self/stat"))
		}
		return result(f[4], nil)
	case "tty":
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return result("", err)
	case "stderr":
		fmt.Fprintln(os.Stderr, a0)
		return result("", nil)
	case "echo":
		return result(a0, nil)
	case "exit":
		n, _ := strconv.Atoi(a0)
		os.Exit(n)
	}
	return fail(fmt.Errorf("unknown op %q", req.Op))
}

// dialTarget connects to target through the proxy of $HTTPS_PROXY (a
// CONNECT tunnel) when it is set, and directly otherwise.
func dialTarget(target string, direct bool) (net.Conn, *bufio.Reader, error) {
	proxy := os.Getenv("HTTPS_PROXY")
	if proxy == "" || direct {
		c, err := net.DialTimeout("tcp", target, 3*time.Second)
		if err != nil {
			return nil, nil, err
		}
		return c, bufio.NewReader(c), nil
	}
	u, err := url.Parse(proxy)
	if err != nil {
		return nil, nil, err
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT %s: %v %v", target, resp, err)
	}
	return c, br, nil
}

// proxyConnect tunnels to target through the proxy of $HTTPS_PROXY.
func proxyConnect(target string) reply {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return fail(fmt.Errorf("no proxy in HTTPS_PROXY (%q)", os.Getenv("HTTPS_PROXY")))
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fail(fmt.Errorf("CONNECT %s: %s: %s", target, resp.Status, b))
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		return fail(err)
	}
	b, err := io.ReadAll(io.LimitReader(inner.Body, 1<<20))
	return result(string(b), err)
}

// setLinkUp asks the kernel, over NETLINK_ROUTE, to bring interface 1 up,
// and reports the kernel's answer (an errno in the netlink ack).
func setLinkUp() reply {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fail(fmt.Errorf("socket: %w", err))
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fail(fmt.Errorf("bind: %w", err))
	}
	// nlmsghdr (16 bytes) + ifinfomsg (16 bytes).
	msg := make([]byte, syscall.NLMSG_HDRLEN+syscall.SizeofIfInfomsg)
	hdr := (*syscall.NlMsghdr)(unsafe.Pointer(&msg[0]))
	hdr.Len = uint32(len(msg))
	hdr.Type = syscall.RTM_NEWLINK
	hdr.Flags = syscall.NLM_F_REQUEST | syscall.NLM_F_ACK
	hdr.Seq = 1
	ifi := (*syscall.IfInfomsg)(unsafe.Pointer(&msg[syscall.NLMSG_HDRLEN]))
	ifi.Family = syscall.AF_UNSPEC
	ifi.Index = 1
	ifi.Flags = syscall.IFF_UP
	ifi.Change = syscall.IFF_UP
	if err := syscall.Sendto(fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fail(fmt.Errorf("sendto: %w", err))
	}
	buf := make([]byte, 4096)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return fail(fmt.Errorf("recvfrom: %w", err))
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return fail(err)
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_ERROR && len(m.Data) >= 4 {
			code := int32(*(*uint32)(unsafe.Pointer(&m.Data[0])))
			return errnoResult(syscall.Errno(-code))
		}
	}
	return fail(fmt.Errorf("no netlink ack"))
}

// aclOtherWrite is a POSIX access ACL in the kernel's xattr form: version
// 2, then (tag, perm, id) for user::rw-, group::r-- and other::rw-.
func aclOtherWrite() []byte {
	const undefinedID = 0xffffffff
	b := []byte{2, 0, 0, 0}
	for _, e := range [][2]uint16{{0x01, 6}, {0x04, 4}, {0x20, 6}} {
		b = append(b, byte(e[0]), byte(e[0]>>8), byte(e[1]), byte(e[1]>>8))
		b = append(b, undefinedID&0xff, undefinedID>>8&0xff, undefinedID>>16&0xff, undefinedID>>24)
	}
	return b
}

// inotifyInit is inotify_init1(IN_CLOEXEC), which arm64 has alone.
// held keeps the descriptors holdInotify opened; stopped the children
// "sigqueue" stopped.
var (
	held    []int
	stopped []*exec.Cmd
)

// holdInotify opens up to n inotify instances and keeps them open,
// returning how many it opened and why it stopped short, if it did.
func holdInotify(n int) (int, error) {
	for i := 0; i < n; i++ {
		fd, err := inotifyInit()
		if err != nil {
			return i, fmt.Errorf("inotify_init1 after %d: %w", i, err)
		}
		held = append(held, fd)
	}
	return n, nil
}

func inotifyInit() (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_INOTIFY_INIT1, syscall.IN_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// addKey adds a "user" key named desc to the caller's user keyring, with
// a timeout of two minutes so that it does not outlive the test.
func addKey(desc string) (int, error) {
	const (
		keySpecUserKeyring = -4
		keyctlSetTimeout   = 15
	)
	typ, _ := syscall.BytePtrFromString("user")
	d, _ := syscall.BytePtrFromString(desc)
	payload := []byte("not a secret")
	ring := keySpecUserKeyring
	id, _, e := syscall.Syscall6(syscall.SYS_ADD_KEY, uintptr(unsafe.Pointer(typ)), uintptr(unsafe.Pointer(d)),
		uintptr(unsafe.Pointer(&payload[0])), uintptr(len(payload)), uintptr(ring), 0)
	if e != 0 {
		return 0, fmt.Errorf("add_key: %w", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_KEYCTL, keyctlSetTimeout, id, 120); e != 0 {
		return 0, fmt.Errorf("keyctl(KEYCTL_SET_TIMEOUT): %w", e)
	}
	return int(id), nil
}

func errnoResult(e syscall.Errno) reply {
	if e != 0 {
		return fail(e)
	}
	return reply{OK: true}
}

// kept holds what "alloc" allocated, so that it stays allocated.
var kept [][]byte

// alloc allocates n MiB, writing every page so that it is really used.
// Every page is kept, so a collection frees nothing; it is turned off so
// that an allocation past a limit fails in the allocator, where Go's
// runtime says "out of memory", and not inside a collection, where Go
// 1.26's mark queue may fault on the failed allocation instead (SIGSEGV
// in spanQueue.tryDrain, about 1 run in 1,000 under RLIMIT_DATA).
func alloc(n int) [][]byte {
	debug.SetGCPercent(-1)
	var bufs [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		bufs = append(bufs, b)
	}
	return bufs
}

// daemon detaches like a classic Unix daemon: a new session, a second fork,
// and the intermediate process exits, leaving an orphaned grandchild.
func daemon(file string) {
	if _, err := syscall.Setsid(); err != nil {
		fmt.Fprintln(os.Stderr, "setsid:", err)
		os.Exit(1)
	}
	cmd := exec.Command("/proc/self/exe", "beat", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "fork:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// beat appends a line to file every 10ms, ignoring the polite signals.
func beat(file string) {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for i := 0; ; i++ {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, i)
			f.Close()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.EROFS: "EROFS",
		syscall.EBUSY: "EBUSY", syscall.ENOENT: "ENOENT", syscall.EXDEV: "EXDEV",
		syscall.EAFNOSUPPORT: "EAFNOSUPPORT", syscall.ENETUNREACH: "ENETUNREACH",
		syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ENOSYS: "ENOSYS",
		syscall.ENXIO: "ENXIO", syscall.ESRCH: "ESRCH", syscall.EINVAL: "EINVAL",
		syscall.EPROTONOSUPPORT: "EPROTONOSUPPORT", syscall.ENOTDIR: "ENOTDIR",
		syscall.EEXIST: "EEXIST", syscall.ENOEXEC: "ENOEXEC",
		syscall.EAGAIN: "EAGAIN", syscall.ENOSPC: "ENOSPC", syscall.ENOMEM: "ENOMEM",
		syscall.EFBIG: "EFBIG", syscall.EOPNOTSUPP: "EOPNOTSUPP",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno%d", int(e))
}
