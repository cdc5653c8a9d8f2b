package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The namespace tier: where unprivileged user namespaces
// exist, a command's launcher starts in a user, mount and IPC namespace
// of its own (NamespaceAttr), binds two directories of its scratch over
// /tmp and /dev/shm (Policy.PrivateTmp) and may then use SysV IPC and
// POSIX message queues (Policy.PrivateIPC): the objects are its own and
// die with it. Everything else of the policy holds as without it.

// launcherNamespaces are the namespaces a launcher starts in.
const launcherNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWIPC

// NamespaceAttr sets attr to start a process in a user, mount and IPC
// namespace of its own, the caller's UID and GID mapped to themselves,
// with CAP_SYS_ADMIN in that user namespace kept across its exec (an
// ambient capability: a process that is not root there loses its
// capabilities at exec otherwise), so that it can mount (Policy.PrivateTmp).
// Restrict drops it with every other capability.
func NamespaceAttr(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= launcherNamespaces
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// NamespacesAvailable reports whether this process can start a program
// as NamespaceAttr says: unprivileged user namespaces exist and no seccomp
// profile refuses them (Docker's and containerd's defaults do). It starts
// /bin/true so, once (~1 ms).
func NamespacesAvailable() bool {
	attr := &syscall.SysProcAttr{}
	NamespaceAttr(attr)
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: attr})
	if err != nil {
		return false
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	return ws.Exited() && ws.ExitStatus() == 0
}

// privateDirs are the directories of Policy.PrivateTmp bound over /tmp
// and /dev/shm.
var privateDirs = []struct{ sub, target string }{{".tmp", "/tmp"}, {".shm", "/dev/shm"}}

// privateTargets returns the targets of privateDirs that the process
// behind proc (/proc/<pid>) sees as dir's: those privateMounts bound for
// it. A socket the Gate finds there shows as "/tmp/…" (the path within
// the program's mount namespace), which is the program's own only when
// its /tmp is dir/.tmp.
func privateTargets(proc, dir string) []string {
	var out []string
	for _, d := range privateDirs {
		var own, seen unix.Stat_t
		// Lstat: a program may have replaced dir/.tmp with a symlink to
		// the /tmp it sees (the host's, where it was kept).
		if unix.Lstat(filepath.Join(dir, d.sub), &own) != nil || own.Mode&unix.S_IFMT != unix.S_IFDIR ||
			unix.Stat(proc+"/root"+d.target, &seen) != nil {
			continue
		}
		if own.Dev == seen.Dev && own.Ino == seen.Ino {
			out = append(out, d.target)
		}
	}
	return out
}

// privateMounts binds dir/.tmp over /tmp and dir/.shm over /dev/shm in
// the calling process's mount namespace, which must be its own (the
// launcher's, NamespaceAttr): a mount there never reaches the host's.
// host is NamespaceIDs of the process that started the caller; the
// caller's mount and IPC namespaces must differ from them, since a
// private IPC policy in the host's IPC namespace would open SysV IPC to
// every grant. /tmp is left as it is when one of keep (the domain's
// hierarchies, the working directory) lies beneath it: a private /tmp
// would hide it (a Project or state directory under /tmp).
//
// It returns the targets it mounted: the domain needs a rule for each
// (Landlock walks a path up through its mounts, so the rule on dir is not
// seen from /tmp).
func privateMounts(dir, host string, keep []string) (mounted []string, err error) {
	if host == "" || NamespaceIDs() == host {
		return nil, errors.New("private /tmp: not in mount and IPC namespaces of its own")
	}
	// Every source is opened before anything is mounted: dir may lie
	// beneath a target.
	srcs := make([]int, len(privateDirs))
	defer func() {
		for _, fd := range srcs {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, d := range privateDirs {
		src := filepath.Join(dir, d.sub)
		if fi, err := os.Lstat(src); err == nil && !fi.IsDir() {
			// An earlier command of the execution replaced it (a
			// symlink, a file): the scratch directory is the
			// execution's, so it is made a directory again.
			_ = os.Remove(src)
		}
		if err := os.Mkdir(src, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("private %s: %w", d.target, err)
		}
		fd, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("private %s: %w", d.target, err)
		}
		srcs[i] = fd
	}
	for i, d := range privateDirs {
		if d.target == "/tmp" && slices.ContainsFunc(keep, func(p string) bool { return p == "/tmp" || strings.HasPrefix(p, "/tmp/") }) {
			continue
		}
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(srcs[i]), d.target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("private %s: bind: %w", d.target, err)
		}
		mounted = append(mounted, d.target)
	}
	return mounted, nil
}

// NamespaceIDs names the calling process's mount and IPC namespaces (""
// when /proc does not say): a launcher compares its own with its
// supervisor's.
func NamespaceIDs() string {
	mnt, err1 := os.Readlink("/proc/self/ns/mnt")
	ipc, err2 := os.Readlink("/proc/self/ns/ipc")
	if err1 != nil || err2 != nil {
		return ""
	}
	return mnt + "," + ipc
}
