package pin

import (
	"strings"
	"testing"
)

// TestLockPackageRoles: a package and its files round-trip through a lock;
// files and truncated belong to a package alone.
func TestLockPackageRoles(t *testing.T) {
	d := DigestBytes([]byte("x"))
	l := &Lock{Servers: map[string]LockServer{"py": {Program: []ProgramFile{
		{Role: RoleProgram, Path: "/usr/bin/python3"},
		{Role: RoleScript, Path: "tools/srv.py", Digest: d},
		{Role: RolePackage, Path: "tools/", Digest: d, Files: 2},
		{Role: RolePackageFile, Path: "tools/helper.py", Digest: d},
		{Role: RolePackage, Path: "node_modules/", Digest: d, Files: 50000, Truncated: true},
	}}}}
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLock(data)
	if err != nil {
		t.Fatalf("ParseLock: %v\n%s", err, data)
	}
	if got := back.Servers["py"].Program; len(got) != 5 || got[2] != l.Servers["py"].Program[2] || got[4] != l.Servers["py"].Program[4] {
		t.Errorf("round trip: %+v", got)
	}
	for _, bad := range []ProgramFile{
		{Role: RoleScript, Path: "x", Files: 1},
		{Role: RolePackageFile, Path: "x", Truncated: true},
		{Role: RolePackage, Path: "x/", Files: -1},
	} {
		l := &Lock{Servers: map[string]LockServer{"py": {Program: []ProgramFile{bad}}}}
		if _, err := l.Marshal(); err == nil || !strings.Contains(err.Error(), "program[0]") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
