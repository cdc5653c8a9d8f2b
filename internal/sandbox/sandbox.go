// Package sandbox confines one command with Landlock, the unprivileged
// Linux security module: a domain that sees the system read-only, writes
// only where its Policy says, optionally refuses TCP, and (ABI 6 and
// later) cannot signal or reach the abstract Unix sockets of anything
// outside it. Landlock's ptrace rule also keeps a domain out of the
// /proc/<pid>/{environ,mem,fd} of every process outside it.
//
// Restrict confines the calling OS thread only; it is meant for a launcher
// that execs the command right after (process.LauncherMain), so that the
// supervisor and the server stay outside the domain. The package holds no
// state.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// MaxABI is the newest Landlock ABI whose rights this package knows and
// handles; a newer kernel is used at this level.
const MaxABI = 7

// ErrUnavailable means the kernel offers no Landlock (not built in, not in
// the active LSM list, or refused by a seccomp filter). The sandbox
// package detects it; callers refuse to run confined commands.
var ErrUnavailable = errors.New("landlock is unavailable")

// Status is what the running kernel offers. The zero value means no
// Landlock.
type Status struct {
	// ABI is the Landlock ABI version used (capped at MaxABI); 0 when
	// Landlock is unavailable.
	ABI int
	// Reason is a short sentence for logs, /readyz and doctor; it never
	// contains a path.
	Reason string
}

// Probe asks the kernel which Landlock ABI it offers. It is cheap (one
// system call) and safe for concurrent use.
func Probe() Status {
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return Status{Reason: "the kernel has no Landlock system calls (or a seccomp filter hides them)"}
	case errors.Is(err, syscall.EOPNOTSUPP):
		return Status{Reason: "Landlock is built in but not enabled (add it to the lsm= boot parameter)"}
	case err != nil:
		return Status{Reason: "Landlock probe failed: " + err.Error()}
	case abi < 1:
		return Status{Reason: "Landlock reports no usable ABI"}
	}
	return Status{ABI: min(abi, MaxABI), Reason: "Landlock ABI " + strconv.Itoa(abi)}
}

// Available reports whether commands can be confined at all.
func (s Status) Available() bool { return s.ABI >= 1 }

// Features lists which rules the ABI enforces, for logs, /readyz, doctor
// and the devspace_command_sandbox_info metric.
type Features struct {
	Filesystem bool // read/write/execute beneath allowed hierarchies (ABI 1)
	Refer      bool // renames and links across directories (ABI 2)
	Truncate   bool // truncate(2) (ABI 3)
	TCP        bool // TCP bind and connect can be refused (ABI 4)
	IoctlDev   bool // ioctl on devices (ABI 5)
	Scoped     bool // signals and abstract Unix sockets stay inside the domain (ABI 6)
	Ptrace     bool // /proc/<pid>/{environ,mem,fd} of processes outside the domain (ABI 1)
	// Syscalls: the system call policy (sockets by family and protocol;
	// no SysV IPC, keyrings, namespaces, io_uring, bpf; seccomp.go).
	// Restrict always installs it; Status.Features reports it as the
	// kernel's offer (seccomp filters exist wherever Landlock does).
	Syscalls bool
	// UnixGate: connects to path-named Unix sockets reach only sockets
	// inside the domain's writable hierarchies (unixgate.go); without it
	// a domain has only socketpair's Unix sockets. Not part of the
	// kernel's offer (Status.Features leaves it false): it also needs
	// pidfd_getfd (GateAvailable).
	UnixGate bool
}

// Features returns the rules enforced at this ABI.
func (s Status) Features() Features {
	return Features{
		Filesystem: s.ABI >= 1, Ptrace: s.ABI >= 1, Refer: s.ABI >= 2, Truncate: s.ABI >= 3,
		TCP: s.ABI >= 4, IoctlDev: s.ABI >= 5, Scoped: s.ABI >= 6, Syscalls: s.ABI >= 1,
	}
}

// String lists the enforced rules, e.g. "filesystem,ptrace,refer,…".
func (f Features) String() string {
	var out []string
	for _, x := range []struct {
		on   bool
		name string
	}{
		{f.Filesystem, "filesystem"}, {f.Ptrace, "ptrace"}, {f.Refer, "refer"}, {f.Truncate, "truncate"},
		{f.TCP, "tcp"}, {f.IoctlDev, "ioctl_dev"}, {f.Scoped, "scoped_signals_and_abstract_sockets"},
		{f.Syscalls, "syscalls"}, {f.UnixGate, "unix_gate"},
	} {
		if x.on {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ",")
}

// Policy is one command's domain. Paths are absolute host paths; a path
// that does not exist is skipped. Everything not listed is denied.
type Policy struct {
	// ReadExec hierarchies may be read, listed and executed (the system,
	// and the Project of a read-only command).
	ReadExec []string `json:"read_exec,omitempty"`
	// ReadExecNoSymlinks are ReadExec hierarchies that a command may have
	// replaced with a symlink (a worktree's source .git, which commands of
	// the source Project can rename): each is opened without following a
	// symlink in any component, and one that is a symlink (or missing)
	// allows nothing. Their paths must be canonical.
	ReadExecNoSymlinks []string `json:"read_exec_no_symlinks,omitempty"`
	// ReadWrite hierarchies may also be written, created in, removed
	// from and renamed within (the Project of a workspaceWrite command,
	// its scratch directory).
	ReadWrite []string `json:"read_write,omitempty"`
	// ReadWriteNoSymlinks are ReadWrite hierarchies opened like
	// ReadExecNoSymlinks.
	ReadWriteNoSymlinks []string `json:"read_write_no_symlinks,omitempty"`
	// ReadFiles may be read (/proc, /dev/urandom).
	ReadFiles []string `json:"read_files,omitempty"`
	// Devices may be read, written and ioctl'd (/dev/null, the pty).
	Devices []string `json:"devices,omitempty"`
	// Network allows IPv4 and IPv6 sockets: TCP, UDP and ping (the
	// system call policy, seccomp.go). Without it no such socket can be
	// made, and Landlock refuses TCP binds and connects as well (ABI 4 and
	// later).
	Network bool `json:"network,omitempty"`
	// RouteNetlink allows NETLINK_ROUTE sockets (getifaddrs: what
	// interfaces and addresses exist); no other netlink protocol.
	RouteNetlink bool `json:"route_netlink,omitempty"`
	// GateUnix allows Unix stream and seqpacket sockets and sends every
	// connect through a Gate (RET_USER_NOTIF): Restrict returns its
	// listener, and whoever serves it (ServeGate) performs the connect on
	// the program's behalf, to a path-named Unix socket only when it lies
	// inside a ReadWrite hierarchy (unixgate.go). Without it the only Unix
	// sockets are socketpair's.
	GateUnix bool `json:"gate_unix,omitempty"`
	// PrivateTmp, when set, is the directory whose .tmp and .shm
	// subdirectories Restrict binds over /tmp and /dev/shm before it
	// drops its capabilities; the caller must be in a mount and IPC
	// namespace of its own (NamespaceAttr), which Restrict checks.
	PrivateTmp string `json:"private_tmp,omitempty"`
	// PrivateIPC allows SysV IPC and POSIX message queues: only in an
	// IPC namespace of the program's own (with PrivateTmp).
	PrivateIPC bool `json:"private_ipc,omitempty"`
	// HostNamespaces is NamespaceIDs of the process that started the
	// caller, which PrivateTmp's namespaces must differ from.
	HostNamespaces string `json:"-"`
	// Opened holds descriptors of hierarchies opened ahead of time
	// (Preopen), used for the paths above that follow symlinks instead of
	// opening them again; nil means none.
	Opened *Opened `json:"-"`
}

// Opened is a set of O_PATH descriptors opened by Preopen. A launcher
// opens the system's hierarchies and its own /proc entries while it
// waits for a command, so that entering the domain costs no path walk
// (procfs look-ups cost ~10 µs each). Not safe for concurrent use.
type Opened struct{ fds map[string]int }

// Preopen opens paths (following symlinks, as a rule on them would);
// a path that cannot be opened is left out and opened again, or found
// absent, when the ruleset is built. The descriptors are close-on-exec.
func Preopen(paths []string) *Opened {
	o := &Opened{fds: make(map[string]int, len(paths))}
	for _, p := range paths {
		if fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
			if old, ok := o.fds[p]; ok {
				unix.Close(old)
			}
			o.fds[p] = fd
		}
	}
	return o
}

// Close closes every descriptor; o may be nil.
func (o *Opened) Close() {
	if o == nil {
		return
	}
	for _, fd := range o.fds {
		unix.Close(fd)
	}
	o.fds = nil
}

// Access rights by ABI.
const (
	fsV1 = (1 << 13) - 1
	fsV2 = (1 << 14) - 1
	fsV3 = (1 << 15) - 1
	fsV5 = (1 << 16) - 1

	readExec  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	readOnly  = ll.AccessFSReadFile | ll.AccessFSReadDir
	readWrite = readExec | ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
	device = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// fileRights are the only rights a rule on a non-directory may carry.
	fileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

func handledFS(abi int) uint64 {
	switch {
	case abi >= 5:
		return fsV5
	case abi >= 3:
		return fsV3
	case abi == 2:
		return fsV2
	}
	return fsV1
}

// Restrict drops every capability (dropCapabilities), sets no_new_privs,
// enters a new Landlock domain built from p and installs p's system call
// policy (a seccomp filter: Filter), on the calling OS thread only. The
// caller must hold runtime.LockOSThread and then exec, or start the
// program, from that thread: the program inherits the domain and the
// policy, other threads of the caller do not. It returns the rules
// enforced and, with p.GateUnix, the Gate's listener descriptor
// (close-on-exec; the caller hands it to whoever serves the Gate and
// closes it), else -1. Errors wrap ErrUnavailable when the kernel has no
// Landlock.
func Restrict(p Policy) (f Features, listener int, err error) {
	st := Probe()
	if !st.Available() {
		return Features{}, -1, fmt.Errorf("%w: %s", ErrUnavailable, st.Reason)
	}
	if p.PrivateIPC && p.PrivateTmp == "" {
		return Features{}, -1, errors.New("a private IPC policy needs PrivateTmp")
	}
	if p.PrivateTmp != "" {
		cwd, _ := os.Getwd()
		keep := slices.Concat(p.ReadExec, p.ReadExecNoSymlinks, p.ReadWrite, p.ReadWriteNoSymlinks, []string{cwd})
		mounted, err := privateMounts(p.PrivateTmp, p.HostNamespaces, keep)
		if err != nil {
			return Features{}, -1, err
		}
		p.ReadWrite = append(slices.Clip(p.ReadWrite), mounted...)
	}
	fd, err := Ruleset(st.ABI, p)
	if err != nil {
		return Features{}, -1, err
	}
	defer syscall.Close(fd)
	if err := dropCapabilities(); err != nil {
		return Features{}, -1, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return Features{}, -1, fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return Features{}, -1, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	if listener, err = installFilter(p); err != nil {
		return Features{}, -1, err
	}
	f = st.Features()
	f.UnixGate = p.GateUnix
	return f, listener, nil
}

// Ruleset builds the Landlock ruleset of p for ABI abi and returns its
// descriptor (close-on-exec; the caller closes it).
func Ruleset(abi int, p Policy) (int, error) {
	handled := handledFS(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled}
	if !p.Network && abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	// The library's struct has fields newer kernels define; an older
	// kernel accepts the larger struct because those bytes are zero.
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	for _, r := range []struct {
		paths    []string
		access   uint64
		symlinks bool
	}{{p.ReadExec, readExec, true}, {p.ReadExecNoSymlinks, readExec, false}, {p.ReadWrite, readWrite, true},
		{p.ReadWriteNoSymlinks, readWrite, false}, {p.ReadFiles, readOnly, true}, {p.Devices, device, true}} {
		for _, path := range r.paths {
			if err := addPath(fd, path, r.access&handled, r.symlinks, p.Opened); err != nil {
				syscall.Close(fd)
				return -1, err
			}
		}
	}
	return fd, nil
}

// addPath allows access beneath path. With symlinks false no component
// of path may be a symlink (openat2 RESOLVE_NO_SYMLINKS); such a path,
// like a missing one, allows nothing.
func addPath(rulesetFD int, path string, access uint64, symlinks bool, opened *Opened) error {
	var fd int
	var err error
	if pre, ok := opened.lookup(path); ok && symlinks {
		return addFD(rulesetFD, pre, access)
	}
	if symlinks {
		fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	} else {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ELOOP) {
			return nil // a symlink: nothing to allow
		}
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) {
			return nil // absent on this system: nothing to allow
		}
		return fmt.Errorf("open rule path: %w", err)
	}
	defer unix.Close(fd)
	return addFD(rulesetFD, fd, access)
}

func (o *Opened) lookup(path string) (int, bool) {
	if o == nil {
		return -1, false
	}
	fd, ok := o.fds[path]
	return fd, ok
}

// addFD allows access beneath the hierarchy fd (O_PATH) refers to.
func addFD(rulesetFD, fd int, access uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat rule path: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	if access == 0 {
		return nil
	}
	if err := ll.LandlockAddPathBeneathRule(rulesetFD, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("landlock_add_rule: %w", err)
	}
	return nil
}

// SystemPaths returns the hierarchies a command may read and execute by
// default: the system and the toolchains an image installs under them.
func SystemPaths() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}
}

// ReadablePaths returns what every command may read: system-wide /proc
// files (not the per-process directories: on some kernels Landlock's
// ptrace rule does not cover /proc/<pid>/environ and maps, so other
// processes' directories stay outside the domain altogether), the CPU
// topology runtimes read to size their thread pools, and the random
// devices. The launcher adds the command's own /proc/<pid>.
func ReadablePaths() []string {
	return []string{
		"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version",
		"/proc/filesystems", "/proc/sys", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random",
	}
}

// DevicePaths returns the devices every command may read and write.
func DevicePaths() []string { return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"} }
