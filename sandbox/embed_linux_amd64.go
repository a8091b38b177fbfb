//go:build !mcphost_helper

package sandbox

import _ "embed"

// helperProgram is the sandbox helper program (internal/helper) built for
// linux/amd64. TestEmbeddedHelperCurrent checks that it is what the source
// in this repository builds to.
//
//go:embed helperbin/linux-amd64
var helperProgram string

// helperSum is the SHA-256 of helperProgram, in hex, written beside it by
// make helper (and checked by TestEmbeddedHelperCurrent): the name of its
// copy on a root host's disk (helperCache).
//
//go:embed helperbin/linux-amd64.sha256
var helperSum string
