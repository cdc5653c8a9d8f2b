package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CgroupAvailable reports whether commands can get their own cgroup v2 with
// cgroup.kill: a cgroup2 hierarchy is mounted, and a sub-cgroup can be
// created under the current process's cgroup (a delegated, writable
// subtree). The reason is a short sentence for /readyz and doctor; it never
// contains a path. It touches the filesystem (creates and removes a probe
// cgroup) and is safe for concurrent use.
func CgroupAvailable() (bool, string) {
	_, reason, err := cgroupParent()
	if err != nil {
		return false, reason
	}
	return true, reason
}

// cgroupParent finds the current process's cgroup v2 directory and probes it.
func cgroupParent() (dir, reason string, err error) {
	mount := cgroup2Mount()
	if mount == "" {
		return "", "cgroup v2 is not mounted", errors.New("no cgroup2 mount")
	}
	rel, err := currentCgroup()
	if err != nil {
		return "", "the current cgroup v2 path is unknown", err
	}
	dir = filepath.Join(mount, filepath.FromSlash(rel))
	if filepath.Base(dir) == serverCgroupName {
		// The cgroup tier moved this server (or an earlier one, before a
		// restart in place) into a leaf of its cgroup: the cgroup it was
		// given is the leaf's parent.
		dir = filepath.Dir(dir)
	}
	probe := filepath.Join(dir, "devspace-probe-"+randomToken(6))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", "cgroup v2 is not writable (no delegated subtree)", err
	}
	defer os.Remove(probe)
	if _, err := os.Stat(filepath.Join(probe, "cgroup.kill")); err != nil {
		return "", "cgroup v2 has no cgroup.kill (kernel older than 5.14)", err
	}
	f, err := os.OpenFile(filepath.Join(probe, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return "", "cgroup v2 processes cannot be moved", err
	}
	f.Close()
	return dir, "cgroup v2 delegated and writable", nil
}

// cgroup2Mount returns the mount point of the cgroup2 hierarchy ("" when
// none): /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid
// ones.
func cgroup2Mount() string {
	var found string
	for _, mt := range cgroupMounts() {
		if mt.v2 && (found == "" || mt.point == "/sys/fs/cgroup") {
			found = mt.point
		}
	}
	return found
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// currentCgroup returns this process's cgroup v2 path ("0::<path>").
func currentCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			p := string(rest)
			if !strings.HasPrefix(p, "/") || strings.Contains(p, "/..") {
				return "", fmt.Errorf("unexpected cgroup path")
			}
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry")
}

// makeCgroup creates the cgroup directory dir (absolute; it may exist).
func makeCgroup(dir string) error {
	if !filepath.IsAbs(dir) {
		return errors.New("cgroup path is not absolute")
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// cgroupMove moves pid into the existing cgroup dir. The kernel makes the
// writer wait for an RCU grace period (milliseconds on an idle machine),
// so it is done ahead of need.
func cgroupMove(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// removeEmptyCgroups removes the command cgroups (newCgroupDir's names)
// under parent that hold no process, and returns how many. They are what
// a server and its supervisors killed together (an OOM kill, a service
// manager's final SIGKILL) leave behind. rmdir removes only an empty
// cgroup, so a cgroup of another server sharing parent that is in use is
// left alone; one that another server has just made for its next launcher
// and not yet entered costs that server the slower start of a launcher
// outside its cgroup, moved in after.
// Called on the cgroup tier's cgroup of all commands, it removes the
// empty tenant cgroups too, with what they hold.
func removeEmptyCgroups(parent string) int {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if isTenantCgroup(e.Name()) {
			n += removeEmptyCgroups(dir)
			_ = os.Remove(dir)
		} else if isCommandCgroup(e.Name()) && os.Remove(dir) == nil {
			n++
		}
	}
	return n
}

// isCommandCgroup reports whether name is one newCgroupDir makes:
// "devspace-" and 24 lowercase hex digits.
func isCommandCgroup(name string) bool { return hexNamed(name, "devspace-") }

// isTenantCgroup reports whether name is one tenantCgroupName makes.
func isTenantCgroup(name string) bool { return hexNamed(name, tenantCgroupPrefix) }

// hexNamed reports whether name is prefix and 24 lowercase hex digits.
func hexNamed(name, prefix string) bool {
	hex, ok := strings.CutPrefix(name, prefix)
	if !ok || len(hex) != 24 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// cgroupKill sends SIGKILL to every process of the cgroup (cgroup.kill).
func cgroupKill(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// cgroupOOMKilled reports whether the kernel's OOM killer killed a
// process of the cgroup (memory.events: oom_kill, or oom_group_kill
// under memory.oom.group). Without the memory controller it is false.
func cgroupOOMKilled(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && (k == "oom_kill" || k == "oom_group_kill") && v != "0" {
			return true
		}
	}
	return false
}

// cgroupPopulated reports whether any process remains in the cgroup or its
// children. An unreadable cgroup counts as empty.
func cgroupPopulated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// cgroupRemove kills what remains in the cgroup and removes it, retrying
// briefly while the kernel finishes tearing processes down.
func cgroupRemove(dir string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		if cgroupPopulated(dir) {
			_ = cgroupKill(dir)
		}
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}
