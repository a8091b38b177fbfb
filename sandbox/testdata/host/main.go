// Command host is a fixture of the sandbox tests: a small program that
// imports the sandbox package, as any importer does (with no extra line in
// main: the package's init turns it into its own helper), and starts the
// hostile fixture server.
//
// Usage:
//
//	host -hostile PATH -worktree DIR [-off] [-home DIR] -ops JSON
//
// It starts the server, sends it each request of the JSON array ops (each
// {"op": ..., "args": [...]}), prints a line "confinement: ...", a line
// "tempdir: ...", the server's replies, one JSON line each, and "ready". With -wait it then
// blocks until killed; without, it closes the server and exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mcphost/mcphost/sandbox"
)

func main() {
	hostile := flag.String("hostile", "", "path of the hostile fixture")
	worktree := flag.String("worktree", "", "the server's worktree")
	off := flag.Bool("off", false, "run the server unconfined")
	home := flag.String("home", "", "HOME of the server's host environment")
	ops := flag.String("ops", "[]", "requests to send, a JSON array")
	wait := flag.Bool("wait", false, "block after the requests until killed")
	flag.Parse()

	var reqs []json.RawMessage
	if err := json.Unmarshal([]byte(*ops), &reqs); err != nil {
		fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin"}
	if *home != "" {
		env = append(env, "HOME="+*home)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sandbox.Start(ctx, sandbox.Config{
		Name:     "hostile",
		Argv:     []string{*hostile},
		Worktree: *worktree,
		HostEnv:  env,
		Off:      *off,
		Stderr:   os.Stderr,
	})
	if err != nil {
		fatal(err)
	}
	fmt.Println("confinement:", p.Confinement())
	fmt.Println("tempdir:", p.TempDir())
	sc := bufio.NewScanner(p.Stdout())
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for _, r := range reqs {
		if _, err := p.Stdin().Write(append(r, '\n')); err != nil {
			fatal(err)
		}
		if !sc.Scan() {
			fatal(fmt.Errorf("no reply (server %s)", p.ExitStatus()))
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
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "host:", err)
	os.Exit(1)
}
