//go:build linux && (mcphost_helper || !(amd64 || arm64))

package sandbox

// helperProgram is empty where no helper program is embedded: in the
// helper program itself (which must not contain its own previous build)
// and on architectures without a seccomp filter. Start then re-executes
// the host program as the helper.
var helperProgram string

// helperSum is empty with helperProgram.
var helperSum string
