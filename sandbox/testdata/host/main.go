// Command host is a fixture of the sandbox tests: a small program that
// imports the sandbox package, as any importer does (with no extra line in
// main: the package's init turns it into its own helper), and starts the
// hostile fixture server.
//
// Usage:
//
//	host -hostile PATH -worktree DIR [-off] [-home DIR] [-private-home DIR] [-no-userns UID] [-full] [-protect P] [-proxy GRANTS] [-lacks] [-shared-root] -ops JSON
//
// With -no-userns it must start as root of a user namespace of its own: it
// forbids nested user namespaces there (user.max_user_namespaces = 0),
// becomes UID with no capability, and only then starts the server, as an
// ordinary user on a host without user namespaces would. It then also
// prints a line "lacks: ..." for each thing the confinement lacks (as
// it does with -lacks).
//
// It starts the server, sends it each request of the JSON array ops (each
// {"op": ..., "args": [...]}), prints a line "confinement: ...", a line
// "tempdir: ...", the server's replies, one JSON line each, and "ready". With -wait it then
// blocks until killed; without, it closes the server and exits.
//
// With -shared-root, started in a mount namespace of its own, it makes
// every mount there shared first, as systemd makes a host's, and prints
// "mounts: ..." (its namespace's mount points) before the start and
// again once the server runs.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/sandbox"
)

func main() {
	hostile := flag.String("hostile", "", "path of the hostile fixture")
	worktree := flag.String("worktree", "", "the server's worktree")
	off := flag.Bool("off", false, "run the server unconfined")
	home := flag.String("home", "", "HOME of the server's host environment")
	privateHome := flag.String("private-home", "", "the server's private home directory (Config.Home)")
	ops := flag.String("ops", "[]", "requests to send, a JSON array")
	wait := flag.Bool("wait", false, "block after the requests until killed")
	noUserNS := flag.Int("no-userns", 0, "forbid user namespaces, then become this user")
	full := flag.Bool("full", false, "require full confinement")
	protect := flag.String("protect", "", "a path to protect")
	read := flag.String("read", "", "comma-separated paths the server may read")
	memory := flag.Int64("memory", 0, "the server's memory limit in MiB (0: the default)")
	fileSize := flag.Int64("file-size", 0, "the server's file size limit in MiB (0: the default)")
	status := flag.Bool("status", false, "print the server's exit status at the end (and go on to it when a request gets no reply)")
	showLacks := flag.Bool("lacks", false, "print a line \"lacks: ...\" for each thing the confinement lacks")
	proxyGrants := flag.String("proxy", "", "give the server the network through an egress proxy granting these comma-separated destinations")
	sharedRoot := flag.Bool("shared-root", false, "make every mount shared first, and print the mount points before and after the start")
	flag.Parse()
	if *sharedRoot {
		// Private first, so that what this namespace then shares (with
		// the servers' namespaces, as a systemd host's would) never
		// reaches the namespace the test runs in, even when the start
		// under test gets it wrong.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			fatal(err)
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
			fatal(err)
		}
		fmt.Println("mounts:", mountPoints())
	}
	if *noUserNS != 0 {
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			fatal(err)
		}
		if err := syscall.Setgroups(nil); err != nil {
			fatal(err)
		}
		if err := syscall.Setgid(*noUserNS); err != nil {
			fatal(err)
		}
		if err := syscall.Setuid(*noUserNS); err != nil {
			fatal(err)
		}
	}
	if *noUserNS != 0 {
		conf, err := sandbox.Probe()
		if err != nil {
			fatal(err)
		}
		fmt.Println("probe:", conf)
	}
	var protects, reads []string
	if *protect != "" {
		protects = []string{*protect}
	}
	if *read != "" {
		reads = strings.Split(*read, ",")
	}

	var reqs []json.RawMessage
	if err := json.Unmarshal([]byte(*ops), &reqs); err != nil {
		fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin"}
	if *home != "" {
		env = append(env, "HOME="+*home)
	}
	var proxy sandbox.Proxy
	if *proxyGrants != "" {
		var grants []egress.Grant
		for _, d := range strings.Split(*proxyGrants, ",") {
			g, err := egress.ParseGrant(d)
			if err != nil {
				fatal(err)
			}
			grants = append(grants, g)
		}
		p, err := egress.New(egress.Config{Grants: grants})
		if err != nil {
			fatal(err)
		}
		proxy = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sandbox.Start(ctx, sandbox.Config{
		Name:        "hostile",
		Argv:        []string{*hostile},
		Worktree:    *worktree,
		HostEnv:     env,
		Off:         *off,
		RequireFull: *full,
		Protect:     protects,
		Read:        reads,
		Home:        *privateHome,
		Stderr:      os.Stderr,
		Proxy:       proxy,
		Limits:      sandbox.Limits{Memory: *memory << 20, FileSize: *fileSize << 20},
	})
	if err != nil {
		fatal(err)
	}
	fmt.Println("confinement:", p.Confinement())
	fmt.Println("tempdir:", p.TempDir())
	if *sharedRoot {
		fmt.Println("mounts:", mountPoints())
	}
	if *noUserNS != 0 || *showLacks {
		for _, l := range p.Lacks() {
			fmt.Println("lacks:", l)
		}
	}
	sc := bufio.NewScanner(p.Stdout())
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for _, r := range reqs {
		if _, err := p.Stdin().Write(append(r, '\n')); err != nil {
			fatal(err)
		}
		if !sc.Scan() {
			if !*status {
				fatal(fmt.Errorf("no reply (server %s)", p.ExitStatus()))
			}
			fmt.Println("no reply")
			break
		}
		fmt.Println(sc.Text())
	}
	fmt.Println("ready")
	if *wait {
		select {}
	}
	if err := p.Close(time.Second); err != nil {
		fatal(err)
	}
	if *status {
		fmt.Println("exit status:", p.ExitStatus())
	}
}

// mountPoints are the mount points of this process's namespace, sorted,
// separated by spaces.
func mountPoints() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		fatal(err)
	}
	var points []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			points = append(points, f[4])
		}
	}
	slices.Sort(points)
	return strings.Join(points, " ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "host:", err)
	os.Exit(1)
}
