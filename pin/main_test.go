package pin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// Tests that need real concurrent or crashing processes re-run this test
// binary with helperEnv set; TestMain then runs the helper instead of the
// tests.
const (
	helperEnv    = "PIN_TEST_HELPER"
	helperDirEnv = "PIN_TEST_DIR"
	helperIDEnv  = "PIN_TEST_ID"
	helperNEnv   = "PIN_TEST_N"
	// crashExit is the exit status of the crash helper, from inside the
	// window between writing the temporary file and renaming it.
	crashExit = 77
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "add":
		helperAdd()
	case "crash":
		helperCrash()
	case "hold":
		helperHold()
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(2)
	}
}

func helperFail(err error) {
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

// testEntry returns a valid entry for a tool of the given name.
func testEntry(tool string) Entry {
	e, err := NewEntry(json.RawMessage(fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, tool)),
		time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	return e
}

// helperAdd waits until its stdin is closed, so that all helpers start
// together, then adds N tools of its own, one Update each.
func helperAdd() {
	io.Copy(io.Discard, os.Stdin)
	s := &Store{Dir: os.Getenv(helperDirEnv)}
	id := os.Getenv(helperIDEnv)
	n, err := strconv.Atoi(os.Getenv(helperNEnv))
	if err != nil {
		helperFail(err)
	}
	for i := range n {
		tool := fmt.Sprintf("tool%d", i)
		err := s.Update(func(st *State) error {
			st.Tools[Key("proc"+id, tool)] = testEntry(tool)
			srv := st.Servers["proc"+id]
			srv.Tools = append(srv.Tools, tool)
			st.Servers["proc"+id] = srv
			return nil
		})
		if err != nil {
			helperFail(err)
		}
	}
	os.Exit(0)
}

// helperCrash adds a tool and dies after the new state is written to its
// temporary file, before the rename: the worst moment for a crash.
func helperCrash() {
	s := &Store{Dir: os.Getenv(helperDirEnv), beforeRename: func(string) error {
		os.Exit(crashExit)
		return nil
	}}
	err := s.Update(func(st *State) error {
		st.Tools[Key("new", "tool")] = testEntry("tool")
		return nil
	})
	helperFail(fmt.Errorf("Update returned %v instead of crashing", err))
}
