// Package containerprofile builds deploy/seccomp/devspace.json, the
// container seccomp profile that lets DevSpace's namespace tier run in a
// container: what Docker's default profile allows a container
// without capabilities, plus only what a command's launcher needs to start
// in a user, mount and IPC namespace of its own and what the Unix gate
// needs without listing SYS_PTRACE.
//
// Every system call of the kernel's table is decided here, allowed or
// refused with the reason; TestEveryCallDecided fails when a new one
// appears. Each command is further narrowed by its own filter
// (internal/sandbox), which refuses most of what the namespace tier needs
// here once the launcher has set itself up.
package containerprofile

import (
	"bytes"
	"encoding/json"

	"golang.org/x/sys/unix"
)

// Rule is one group of system calls of the profile, in the JSON form
// Docker, containerd and CRI-O read (the libseccomp names).
type Rule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []Arg    `json:"args,omitempty"`
	Comment  string   `json:"comment"`
}

// Arg is a condition on one argument of a call.
type Arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// Profile is the whole profile.
type Profile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet uint     `json:"defaultErrnoRet"`
	Architectures   []string `json:"architectures"`
	Syscalls        []Rule   `json:"syscalls"`
}

const (
	allow = "SCMP_ACT_ALLOW"
	errno = "SCMP_ACT_ERRNO"
)

// group is a Rule without the action: a purpose and its calls.
type group struct {
	why   string
	names []string
}

// allowed are the calls allowed without conditions: those of Docker's
// default profile for a container without capabilities (the same set,
// named by purpose), plus the calls kernels added since that a current
// C library or runtime uses.
var allowed = []group{
	{"files and directories", []string{
		"access", "chdir", "chmod", "chown", "close", "close_range", "copy_file_range", "creat",
		"faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir", "fchmod", "fchmodat", "fchmodat2",
		"fchown", "fchownat", "fcntl", "fdatasync", "flock", "fstat", "fstatfs", "fsync", "ftruncate",
		"futimesat", "getcwd", "getdents", "getdents64", "lchown", "link", "linkat", "lseek", "lstat",
		"mkdir", "mkdirat", "mknod", "mknodat", "name_to_handle_at", "newfstatat", "open", "openat", "openat2",
		"pread64", "preadv", "preadv2", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink",
		"readlinkat", "readv", "rename", "renameat", "renameat2", "rmdir", "sendfile", "splice", "stat",
		"statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "tee", "truncate",
		"umask", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vmsplice", "write", "writev",
		"cachestat", "file_getattr", "file_setattr",
	}},
	{"extended attributes", []string{
		"fgetxattr", "flistxattr", "fremovexattr", "fsetxattr", "getxattr", "lgetxattr", "listxattr",
		"llistxattr", "lremovexattr", "lsetxattr", "removexattr", "setxattr",
		"getxattrat", "listxattrat", "removexattrat", "setxattrat",
	}},
	{"memory", []string{
		"brk", "madvise", "membarrier", "memfd_create", "memfd_secret", "mincore", "mlock", "mlock2",
		"mlockall", "mmap", "mprotect", "mremap", "msync", "munlock", "munlockall", "munmap",
		"pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages", "mseal", "map_shadow_stack",
	}},
	{"processes, threads and signals (clone with conditions below)", []string{
		"arch_prctl", "capget", "capset", "execve", "execveat", "exit", "exit_group", "fork", "futex",
		"futex_waitv", "futex_requeue", "futex_wait", "futex_wake", "get_robust_list", "get_thread_area",
		"getcpu", "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getrusage", "getsid", "gettid",
		"ioprio_get", "ioprio_set", "kill", "pidfd_open", "pidfd_send_signal", "prctl", "process_mrelease",
		"restart_syscall", "rseq", "rseq_slice_yield", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
		"rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo",
		"sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity", "sched_getattr",
		"sched_getparam", "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity",
		"sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "set_robust_list",
		"set_thread_area", "set_tid_address", "setpgid", "setpriority", "setsid", "sigaltstack",
		"signalfd", "signalfd4", "tgkill", "tkill", "vfork", "wait4", "waitid", "modify_ldt",
	}},
	{"debugging a process of one's own (the kernel's ptrace access check and Landlock still apply)", []string{
		"ptrace", "process_vm_readv", "process_vm_writev",
	}},
	{"identity and limits", []string{
		"getegid", "geteuid", "getgid", "getgroups", "getresgid", "getresuid", "getrlimit", "getuid",
		"prlimit64", "setfsgid", "setfsuid", "setgid", "setgroups", "setregid", "setresgid", "setresuid",
		"setreuid", "setrlimit", "setuid", "sysinfo", "uname",
	}},
	{"time and timers", []string{
		"adjtimex", "alarm", "clock_adjtime", "clock_getres", "clock_gettime", "clock_nanosleep",
		"getitimer", "gettimeofday", "nanosleep", "pause", "setitimer", "time", "timer_create",
		"timer_delete", "timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create",
		"timerfd_gettime", "timerfd_settime", "times",
	}},
	{"waiting on events", []string{
		"epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2",
		"epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "fanotify_mark", "inotify_add_watch",
		"inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents",
		"io_pgetevents", "io_setup", "io_submit", "poll", "ppoll", "pselect6", "select",
	}},
	{"pipes, descriptors and randomness", []string{
		"dup", "dup2", "dup3", "getrandom", "ioctl", "pipe", "pipe2",
	}},
	{"sockets (socket with a condition below; each command's filter narrows the families)", []string{
		"accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt", "listen",
		"recvfrom", "recvmmsg", "recvmsg", "sendmmsg", "sendmsg", "sendto", "setsockopt", "shutdown",
		"socketpair",
	}},
	{"SysV IPC and POSIX message queues (each command's filter refuses them outside its own IPC namespace)", []string{
		"mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink",
		"msgctl", "msgget", "msgrcv", "msgsnd", "semctl", "semget", "semop", "semtimedop",
		"shmat", "shmctl", "shmdt", "shmget",
	}},
	{"confining oneself: Landlock and seccomp, which every command's launcher installs", []string{
		"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "seccomp",
	}},
	{"io_uring (each command's filter refuses it)", []string{
		"io_uring_enter", "io_uring_register", "io_uring_setup",
	}},
}

// refused are the calls the profile refuses (the default action, EPERM),
// as Docker's default does for a container without capabilities, and the
// newer calls no command or DevSpace needs.
var refused = []group{
	{"the kernel, its modules and the machine", []string{
		"acct", "create_module", "delete_module", "finit_module", "get_kernel_syms", "init_module",
		"kexec_file_load", "kexec_load", "query_module", "reboot", "swapoff", "swapon", "_sysctl",
		"syslog", "iopl", "ioperm", "nfsservctl", "uselib", "ustat", "sysfs", "vhangup",
		"setdomainname", "sethostname", "clock_settime", "settimeofday", "quotactl", "quotactl_fd",
		"lookup_dcookie",
	}},
	{"namespaces and mounts beyond the launcher's (clone and mount with conditions below)", []string{
		"unshare", "setns", "pivot_root", "chroot", "umount2", "fsconfig", "fsmount", "fsopen", "fspick",
		"move_mount", "mount_setattr", "open_tree", "open_tree_attr", "listmount", "statmount", "listns",
	}},
	{"kernel programs, tracing and other processes' memory", []string{
		"bpf", "perf_event_open", "userfaultfd", "kcmp", "process_madvise", "uprobe", "uretprobe",
		"fanotify_init", "open_by_handle_at",
	}},
	{"keyrings, shared by every process of a user", []string{"add_key", "keyctl", "request_key"}},
	{"NUMA placement", []string{"get_mempolicy", "mbind", "migrate_pages", "move_pages", "set_mempolicy", "set_mempolicy_home_node"}},
	{"security module attributes", []string{"lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr"}},
	{"not implemented by Linux", []string{"afs_syscall", "getpmsg", "putpmsg", "security", "tuxcall", "vserver"}},
	{"personality with a condition below", []string{"personality"}},
}

// conditional are the calls allowed only with the arguments given.
func conditional() []Rule {
	nosys := uint(unix.ENOSYS)
	return []Rule{
		{Names: []string{"clone"}, Action: allow, Comment: "new threads and processes, and the launcher's user, mount and IPC namespaces (NamespaceAttr); never a PID, network, UTS or cgroup namespace",
			Args: []Arg{{Index: 0, Value: cloneMask, ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}}},
		{Names: []string{"clone3"}, Action: errno, ErrnoRet: &nosys, Comment: "its flags are out of a filter's sight: ENOSYS, and runtimes fall back to clone"},
		{Names: []string{"mount"}, Action: allow, Comment: "bind mounts only: the launcher binds its scratch over /tmp and /dev/shm in its own mount namespace (the kernel allows it only there; no process of the container holds CAP_SYS_ADMIN otherwise)",
			Args: []Arg{{Index: 3, Value: ^uint64(unix.MS_BIND | unix.MS_REC), ValueTwo: 0, Op: "SCMP_CMP_MASKED_EQ"}}},
		{Names: []string{"pidfd_getfd"}, Action: allow, Comment: "the Unix gate copies a command's socket to connect it in the command's view; the kernel's ptrace access check and Landlock still apply, so SYS_PTRACE need not be listed"},
		{Names: []string{"socket"}, Action: allow, Comment: "every family but AF_VSOCK (the host's hypervisor sockets)",
			Args: []Arg{{Index: 0, Value: unix.AF_VSOCK, Op: "SCMP_CMP_NE"}}},
		{Names: []string{"personality"}, Action: allow, Comment: "querying, and the Linux personalities with and without address space randomization",
			Args: []Arg{{Index: 0, Value: 0, Op: "SCMP_CMP_EQ"}}},
		{Names: []string{"personality"}, Action: allow, Args: []Arg{{Index: 0, Value: 0x0008, Op: "SCMP_CMP_EQ"}}},
		{Names: []string{"personality"}, Action: allow, Args: []Arg{{Index: 0, Value: 0x20000, Op: "SCMP_CMP_EQ"}}},
		{Names: []string{"personality"}, Action: allow, Args: []Arg{{Index: 0, Value: 0x20008, Op: "SCMP_CMP_EQ"}}},
		{Names: []string{"personality"}, Action: allow, Args: []Arg{{Index: 0, Value: 0xffffffff, Op: "SCMP_CMP_EQ"}}},
	}
}

// Build returns the profile.
func Build() Profile {
	p := Profile{
		DefaultAction:   errno,
		DefaultErrnoRet: 1, // EPERM
		// The image is built for these two. The 32-bit ABIs of either are
		// refused whole: nothing in the image uses them.
		Architectures: []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"},
	}
	for _, g := range allowed {
		p.Syscalls = append(p.Syscalls, Rule{Names: g.names, Action: allow, Comment: g.why})
	}
	p.Syscalls = append(p.Syscalls, conditional()...)
	return p
}

// cloneMask are the namespace flags clone may not carry: all but
// NamespaceAttr's (user, mount, IPC).
const cloneMask = unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// JSON returns the profile as deploy/seccomp/devspace.json holds it.
func JSON() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Build()); err != nil {
		panic(err) // plain values: cannot fail
	}
	return b.Bytes()
}
