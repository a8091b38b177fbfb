//go:build !mcphost_helper

package sandbox

import _ "embed"

// helperProgram is the sandbox helper program (internal/helper) built for
// linux/arm64. TestEmbeddedHelperCurrent checks that it is what the source
// in this repository builds to.
//
//go:embed helperbin/linux-arm64
var helperProgram string
