// Command helper is the sandbox helper that package sandbox embeds and
// runs, from a sealed memory file, to start each confined server.
//
// It is package sandbox itself, built alone (with the mcphost_helper build
// tag, which leaves the embedded copy out): the package's init runs the
// helper when the process was started as one, so main only runs when
// something else started this program, and then refuses.
//
// Why a program of its own rather than the host program re-executed: the
// helper starts once per server, and a Go program's start grows with what
// it links. The importing agent's binary (the go-sdk, a provider SDK,
// BLAKE3's CPU feature probe) reached the helper's code after 2 to 3 ms
// here; this program reaches it in about one.
//
// The embedded copies in ../../helperbin are built by
//
//	make helper
//
// and TestEmbeddedHelperCurrent fails when they differ from what this
// source builds to, so a binary in the repository is never trusted for
// being there.
package main

import (
	"fmt"
	"os"

	_ "github.com/mcphost/mcphost/sandbox"
)

func main() {
	fmt.Fprintln(os.Stderr, "mcphost-sandbox-helper: this program is run by package sandbox of mcphost to confine a server; it is not meant to be started by hand")
	os.Exit(125)
}
