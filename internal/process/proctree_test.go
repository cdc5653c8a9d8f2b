package process

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestTreeBelowMatchesTheProcessTable: the children-list walk the disk
// guard uses finds what the whole-table walk finds, threads' children
// included (bash starts them from its main thread; a multi-threaded
// parent's children hang off the thread that forked them).
func TestTreeBelowMatchesTheProcessTable(t *testing.T) {
	if !hasChildrenLists() {
		t.Fatal("this kernel keeps no children lists (CONFIG_PROC_CHILDREN); the disk guard falls back to the whole process table")
	}
	cmd := exec.Command("bash", "-c", "sleep 30 & (sleep 30 & sleep 30 & wait) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	root := cmd.Process.Pid
	var want, got []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		want = pids(descendantsOf(root))
		var ok bool
		if got, ok = treeBelow(root); !ok {
			t.Fatal("treeBelow: no children lists although the kernel has them")
		}
		slices.Sort(want)
		slices.Sort(got)
		if len(want) == 4 && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("treeBelow %v, the process table %v (want 4 processes)", got, want)
		}
	}
	for _, pid := range want {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
