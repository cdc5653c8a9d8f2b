package sandbox

import (
	"errors"
	"syscall"
	"testing"
)

// TestRulesetEveryABI builds the default domain at every ABI the package
// knows (the kernel accepts a ruleset of an older ABI), with files and
// directories mixed and absent paths skipped. Restrict itself is tested
// through real commands in internal/process (it confines the calling
// thread for good).
func TestRulesetEveryABI(t *testing.T) {
	st := Probe()
	if !st.Available() {
		t.Skip(st.Reason)
	}
	dir := t.TempDir()
	p := Policy{
		ReadExec:  append(SystemPaths(), "/nonexistent/toolchain"),
		ReadWrite: []string{dir},
		ReadFiles: ReadablePaths(),
		Devices:   DevicePaths(),
	}
	for abi := 1; abi <= st.ABI; abi++ {
		fd, err := Ruleset(abi, p)
		if err != nil {
			t.Fatalf("ABI %d: %v", abi, err)
		}
		syscall.Close(fd)
	}
}

func TestFeatures(t *testing.T) {
	for _, tt := range []struct {
		abi  int
		want string
	}{
		{0, ""},
		{1, "filesystem,ptrace,syscalls"},
		{4, "filesystem,ptrace,refer,truncate,tcp,syscalls"},
		{7, "filesystem,ptrace,refer,truncate,tcp,ioctl_dev,scoped_signals_and_abstract_sockets,syscalls"},
	} {
		if got := (Status{ABI: tt.abi}).Features().String(); got != tt.want {
			t.Errorf("ABI %d: %q, want %q", tt.abi, got, tt.want)
		}
	}
}

func TestRestrictUnavailable(t *testing.T) {
	if Probe().Available() {
		t.Skip("Landlock is available; the refusal is tested in internal/process with a forced probe")
	}
	if _, _, err := Restrict(Policy{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Restrict = %v, want ErrUnavailable", err)
	}
}
