//go:build !mcphost_helper

package sandbox

import _ "embed"

// helperProgram is the sandbox helper program (internal/helper) built for
// linux/amd64. TestEmbeddedHelperCurrent checks that it is what the source
// in this repository builds to.
//
//go:embed helperbin/linux-amd64
var helperProgram string
