package containerprofile

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite deploy/seccomp/devspace.json")

const shipped = "../../deploy/seccomp/devspace.json"

// TestShippedProfile: deploy/seccomp/devspace.json is what Build says
// (go test ./internal/containerprofile -update rewrites it).
func TestShippedProfile(t *testing.T) {
	want := JSON()
	if *update {
		if err := os.WriteFile(shipped, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from Build(); run go test ./internal/containerprofile -update and review the diff", shipped)
	}
}

// TestEveryCallDecided: each system call of the kernel's x86-64 table (as
// golang.org/x/sys knows it) is allowed or refused, once. A call a newer
// kernel adds fails here until it is decided.
func TestEveryCallDecided(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("go list golang.org/x/sys: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "unix", "zsysnum_linux_amd64.go"))
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]bool{}
	for _, m := range regexp.MustCompile(`\bSYS_([A-Z0-9_]+)\s*=`).FindAllStringSubmatch(string(src), -1) {
		table[strings.ToLower(m[1])] = true
	}
	if len(table) < 350 {
		t.Fatalf("read %d calls from x/sys; the table's format changed", len(table))
	}
	decided := map[string]string{}
	decide := func(name, how string) {
		if prev, ok := decided[name]; ok && !(prev == "conditional" && how == "conditional") && !(prev == "refused" && how == "conditional") {
			t.Errorf("%s decided twice (%s, %s)", name, prev, how)
		}
		decided[name] = how
	}
	for _, g := range allowed {
		for _, n := range g.names {
			decide(n, "allowed")
		}
	}
	for _, g := range refused {
		for _, n := range g.names {
			decide(n, "refused")
		}
	}
	for _, r := range conditional() {
		for _, n := range r.Names {
			decide(n, "conditional")
		}
	}
	for n := range table {
		if _, ok := decided[n]; !ok {
			t.Errorf("%s is neither allowed nor refused", n)
		}
	}
	for n := range decided {
		if !table[n] {
			t.Errorf("%s is not a system call of x86-64", n)
		}
	}
}

// TestNamespaceDelta: clone may create exactly the launcher's namespaces,
// mount only bind, and nothing that Docker's default refuses a container
// without capabilities is allowed besides.
func TestNamespaceDelta(t *testing.T) {
	all := uint64(unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET)
	launcher := uint64(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWIPC)
	if cloneMask&launcher != 0 || cloneMask|launcher != all {
		t.Fatalf("clone mask %#x: want every namespace flag but %#x", cloneMask, launcher)
	}
	var got []string
	for _, r := range Build().Syscalls {
		if r.Action != allow {
			continue
		}
		for _, n := range r.Names {
			if slices.Contains([]string{"unshare", "setns", "umount2", "pivot_root", "add_key", "keyctl", "bpf", "perf_event_open", "userfaultfd", "open_by_handle_at"}, n) {
				got = append(got, n)
			}
		}
	}
	if len(got) > 0 {
		t.Fatalf("allowed: %v", got)
	}
}
