package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tree is the process tree of an unconfined server on Windows: a job
// object that the server is put in before it runs its first instruction
// (it is created suspended), and that every process it starts joins
// (breaking away is not allowed). Killing the tree terminates the job;
// the job is also marked to be killed when its last handle closes, so
// that the host's death ends the server's processes too.
//
// What it cannot guarantee: a process started on the server's behalf by
// something outside the job (a service, the task scheduler, WMI) is not
// in it.
type tree struct {
	mu  sync.Mutex // held by kill and release: the server's exit and Close may race
	job windows.Handle
}

func newTree() *tree { return &tree{} }

func (t *tree) prepare(cmd *exec.Cmd) error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("setting up the job object: %w", err)
	}
	t.job = job
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Suspended until it is in the job; a process group of its own,
		// so the console's Ctrl-C does not reach it.
		CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP,
	}
	return nil
}

// attach puts the suspended server in the job, then lets it run.
func (t *tree) attach(p *os.Process) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("opening the server's process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(t.job, h); err != nil {
		return fmt.Errorf("putting the server in its job object: %w", err)
	}
	return resumeThreads(uint32(p.Pid))
}

// resumeThreads resumes the threads of the suspended process pid (one,
// its first).
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the server's threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("opening the server's thread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resuming the server: %w", err)
		}
		resumed++
	}
	if resumed == 0 {
		return errors.New("resuming the server: no thread found")
	}
	return nil
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// kill terminates every process of the job and waits, at most killWait,
// until the job has none left.
func (t *tree) kill() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job == 0 {
		return nil
	}
	if err := windows.TerminateJobObject(t.job, 1); err != nil {
		return fmt.Errorf("terminating the server's job object: %w", err)
	}
	deadline := time.Now().Add(killWait)
	for {
		var acct jobAccounting
		err := windows.QueryInformationJobObject(t.job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil)
		if err != nil {
			return fmt.Errorf("querying the server's job object: %w", err)
		}
		if acct.ActiveProcesses == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d still running", errTreeSurvived, acct.ActiveProcesses)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// note does nothing: the job holds every process of the tree.
func (t *tree) note() {}

// release closes the job object; with KILL_ON_JOB_CLOSE that also ends
// whatever is left in it.
func (t *tree) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}

// lookProgram finds the server's program: a name with a path separator
// relative to dir, any other through the absolute entries of the PATH in
// env only (never the current directory) and not in untrusted directories
// (ones servers may write), trying the extensions of PATHEXT.
func lookProgram(file string, env []string, dir string, untrusted []string) (string, error) {
	exts := []string{".com", ".exe", ".bat", ".cmd"}
	if v, ok := envValueFold(env, "PATHEXT"); ok && v != "" {
		exts = nil
		for _, e := range strings.Split(strings.ToLower(v), ";") {
			if e != "" && e[0] == '.' {
				exts = append(exts, e)
			}
		}
	}
	try := func(p string) (string, bool) {
		cands := []string{p}
		if filepath.Ext(p) == "" {
			cands = nil
			for _, e := range exts {
				cands = append(cands, p+e)
			}
		}
		for _, c := range cands {
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				return c, true
			}
		}
		return "", false
	}
	if strings.ContainsAny(file, `/\:`) {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if c, ok := try(filepath.Clean(p)); ok {
			return c, nil
		}
		return "", fmt.Errorf("%q: %w", file, errNotFound)
	}
	pathEnv, _ := envValueFold(env, "PATH")
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) || underAny(filepath.Clean(d), untrusted) {
			continue
		}
		if c, ok := try(filepath.Join(d, file)); ok {
			return c, nil
		}
	}
	return "", fmt.Errorf("%q: %w in PATH %q", file, errNotFound, pathEnv)
}

// envValueFold is envValue with the name matched regardless of case, as
// Windows matches environment variable names.
func envValueFold(env []string, name string) (string, bool) {
	var val string
	var found bool
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, name) {
			val, found = v, true
		}
	}
	return val, found
}
