package sandbox

import "strings"

// windowsEnv are the variables a Windows program needs to start and find
// its system (many fail without SystemRoot) and none of which usually
// carries a secret, with PATH and the profile directory.
var windowsEnv = [...]string{
	"PATH", "PATHEXT", "SystemRoot", "SystemDrive", "windir", "ComSpec",
	"USERPROFILE", "USERNAME", "OS", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
}

// passedOnThisOS reports whether name is one of windowsEnv, matched
// regardless of case as Windows matches variable names ("Path").
func passedOnThisOS(name string) bool {
	for _, w := range windowsEnv {
		if strings.EqualFold(name, w) {
			return true
		}
	}
	return false
}
