package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system call policy (a seccomp filter) closes what Landlock leaves
// open between one domain and everything else: the ways a process reaches
// another one that are not files. Each rule says why it is there
// (docs/design.md B5 lists them for the Owner). It is installed by the
// same thread that entered the Landlock domain, after no_new_privs, and is
// inherited by everything the program starts.
//
// Refused outright, whatever the policy:
//   - clone3 (ENOSYS, which C libraries and runtimes fall back to clone
//     on): it starts a child in any cgroup named by a descriptor
//     (CLONE_INTO_CGROUP), and its flags live in memory a filter cannot
//     read.
//   - clone with a CLONE_NEW* flag, unshare and setns (EPERM): a user
//     namespace opens kernel surface no tool needs, and an IPC or network
//     namespace is no business of a command.
//   - SysV shared memory, semaphores and message queues, POSIX message
//     queues (EPERM): their objects live in the IPC namespace, which every
//     grant shares, are named by guessable keys and outlive the command
//     (a segment stays pinned after revoke-all). Allowed with
//     Policy.PrivateIPC, where the IPC namespace is the command's own.
//   - add_key, request_key, keyctl (EPERM): the user and session keyrings
//     are shared by everything running as the server's user, the Owner's
//     shell included on a host install.
//   - io_uring (ENOSYS, which liburing and libuv fall back on): its
//     operations (connect, socket, openat) run in kernel workers that no
//     seccomp filter sees.
//   - bpf, perf_event_open, userfaultfd (EPERM): kernel attack surface and
//     side channels (Docker's default profile refuses them too).
//   - syslog (EPERM): the kernel log belongs to the host.
//   - the new mount API and mount itself (EPERM): only meaningful with
//     privileges a command never has; refused in case one appears.
//   - system calls of another ABI (i386 through int 0x80, x32): their
//     numbers differ, so none of these rules would match them (ENOSYS).
//
// Sockets, by family, type and protocol (socket, socketpair):
//   - AF_UNIX stream and seqpacket sockets: from socketpair always, from
//     socket only with Policy.GateUnix, under which connect goes through
//     the Gate; they carry no address after connect. Datagram
//     Unix sockets are refused (EPROTONOSUPPORT): sendto and sendmsg name
//     a destination path on every call, in memory a filter cannot read,
//     so no rule could keep them inside the domain.
//   - AF_NETLINK with NETLINK_ROUTE only (getifaddrs; Policy.RouteNetlink): NETLINK_SOCK_DIAG
//     lists every socket on the machine (ss -xa); the rest is for
//     privileged daemons.
//   - with the network allowed, AF_INET and AF_INET6 with TCP (stream),
//     UDP and ping (datagram); MPTCP, SCTP, UDP-Lite and raw sockets are
//     refused (EPROTONOSUPPORT): Landlock's TCP rules cover plain TCP only,
//     and raw sockets are for the privileged. Under a denied network every
//     IPv4 and IPv6 socket is refused (EACCES, as Landlock refuses TCP).
//   - every other family (packet, vsock, bluetooth, alg, …) is refused
//     (EAFNOSUPPORT).
//
// With Policy.GateUnix, connect stops in the filter and waits for the
// Gate (RET_USER_NOTIF), which performs it on the command's behalf.

// seccompData offsets (struct seccomp_data).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] at offArgs+8*i; the low 32 bits first (little endian)
)

// Return values.
const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// sysClone3 is clone3's number on every architecture: Linux numbers the
// system calls added since 5.3 alike everywhere.
const sysClone3 = 435

// x32Bit marks the x32 ABI's system call numbers on x86-64.
const x32Bit = 0x40000000

// namespaceFlags are clone's CLONE_NEW* flags (CLONE_NEWTIME is only
// reachable through clone3 and unshare, both refused).
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// sockTypeMask strips SOCK_NONBLOCK and SOCK_CLOEXEC from socket's type.
const sockTypeMask = ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)

// nativeArch is the AUDIT_ARCH of the architectures the policy knows.
func nativeArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("no system call policy for %s", runtime.GOARCH)
}

// refusedEPERM are the system calls refused with EPERM; refusedENOSYS
// those refused as if the kernel had none.
var (
	refusedEPERM = []uint32{
		unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
		unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMCTL, unix.SYS_SEMTIMEDOP,
		unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK,
		unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_SYSLOG,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
		unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_MOUNT_SETATTR,
	}
	refusedENOSYS = []uint32{sysClone3, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}
	// privateIPC are the refusedEPERM calls a program in an IPC namespace
	// of its own may make (Policy.PrivateIPC): their objects live there.
	privateIPC = map[uint32]bool{
		unix.SYS_SHMGET: true, unix.SYS_SHMAT: true, unix.SYS_SHMCTL: true, unix.SYS_SHMDT: true,
		unix.SYS_SEMGET: true, unix.SYS_SEMOP: true, unix.SYS_SEMCTL: true, unix.SYS_SEMTIMEDOP: true,
		unix.SYS_MSGGET: true, unix.SYS_MSGSND: true, unix.SYS_MSGRCV: true, unix.SYS_MSGCTL: true,
		unix.SYS_MQ_OPEN: true, unix.SYS_MQ_UNLINK: true,
	}
)

// Socket protocols the filter names.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// Filter builds the system call policy of p (see the comment above) as a
// classic BPF program for the running architecture.
func Filter(p Policy) ([]unix.SockFilter, error) {
	arch, err := nativeArch()
	if err != nil {
		return nil, err
	}
	var a bpfAsm
	a.ld(offArch)
	a.jeq(arch, "", "enosys")
	a.ld(offNr)
	if runtime.GOARCH == "amd64" {
		a.jset(x32Bit, "enosys", "")
	}
	for _, nr := range refusedENOSYS {
		a.jeq(nr, "enosys", "")
	}
	for _, nr := range refusedEPERM {
		if p.PrivateIPC && privateIPC[nr] {
			continue
		}
		a.jeq(nr, "eperm", "")
	}
	a.jeq(unix.SYS_CLONE, "clone", "")
	a.jeq(unix.SYS_SOCKET, "socket", "")
	a.jeq(unix.SYS_SOCKETPAIR, "socketpair", "")
	if p.GateUnix {
		a.jeq(unix.SYS_CONNECT, "notify", "")
	}
	a.ret(retAllow)

	a.label("clone")
	a.ld(offArgs) // flags
	a.jset(namespaceFlags, "eperm", "allow")

	// socketpair makes only Unix sockets (the kernel refuses the rest),
	// and for DevSpace's own Git the only ones it may have.
	a.label("socketpair")
	a.ld(offArgs) // domain
	a.jeq(unix.AF_UNIX, "unix", "eafnosupport")

	a.label("socket")
	a.ld(offArgs) // domain
	if p.GateUnix {
		a.jeq(unix.AF_UNIX, "unix", "")
	}
	if p.RouteNetlink {
		a.jeq(unix.AF_NETLINK, "netlink", "")
	}
	if p.Network {
		a.jeq(unix.AF_INET, "inet", "")
		a.jeq(unix.AF_INET6, "inet", "")
	} else {
		a.jeq(unix.AF_INET, "eacces", "")
		a.jeq(unix.AF_INET6, "eacces", "")
	}
	a.ret(retErrno(unix.EAFNOSUPPORT))

	a.label("unix")
	a.ld(offArgs + 8) // type
	a.and(sockTypeMask)
	a.jeq(unix.SOCK_STREAM, "allow", "")
	a.jeq(unix.SOCK_SEQPACKET, "allow", "eprotonosupport")

	a.label("netlink")
	a.ld(offArgs + 16) // protocol
	a.jeq(unix.NETLINK_ROUTE, "allow", "eprotonosupport")

	if p.Network {
		a.label("inet")
		a.ld(offArgs + 8) // type
		a.and(sockTypeMask)
		a.jeq(unix.SOCK_STREAM, "", "dgram")
		a.ld(offArgs + 16) // protocol
		a.jeq(0, "allow", "")
		a.jeq(protoTCP, "allow", "eprotonosupport")
		a.label("dgram")
		a.jeq(unix.SOCK_DGRAM, "", "eprotonosupport")
		a.ld(offArgs + 16)
		a.jeq(0, "allow", "")
		a.jeq(protoUDP, "allow", "")
		a.jeq(protoICMP, "allow", "")
		a.jeq(protoICMPv6, "allow", "eprotonosupport")
	}

	a.label("allow")
	a.ret(retAllow)
	a.label("notify")
	a.ret(retNotify)
	a.label("enosys")
	a.ret(retErrno(unix.ENOSYS))
	a.label("eperm")
	a.ret(retErrno(unix.EPERM))
	a.label("eacces")
	a.ret(retErrno(unix.EACCES))
	a.label("eafnosupport")
	a.ret(retErrno(unix.EAFNOSUPPORT))
	a.label("eprotonosupport")
	a.ret(retErrno(unix.EPROTONOSUPPORT))
	return a.assemble()
}

// installFilter installs p's system call policy on the calling thread
// (no_new_privs must be set). With p.GateUnix it returns the listener
// descriptor of the Unix gate (close-on-exec), else -1.
func installFilter(p Policy) (listener int, err error) {
	prog, err := Filter(p)
	if err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(0)
	if p.GateUnix {
		// Once the gate has received a connect, only a fatal signal
		// interrupts it: the gate performs the connect on the command's
		// socket, and a restarted call would find it done.
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
		// Before Linux 5.19: a signal may restart a connect under way,
		// which then answers EISCONN (runtimes treat it as connected).
		flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
		r, _, errno = unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	}
	if errno != 0 {
		return -1, fmt.Errorf("seccomp filter: %w", errno)
	}
	if !p.GateUnix {
		return -1, nil
	}
	return int(r), nil
}

// bpfAsm assembles a classic BPF program with forward jumps to labels
// ("" means the next instruction).
type bpfAsm struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  []bpfJump
}

type bpfJump struct {
	at     int
	jt, jf string
}

func (a *bpfAsm) emit(code uint16, k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: code, K: k})
}

func (a *bpfAsm) ld(off uint32) { a.emit(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (a *bpfAsm) and(k uint32)  { a.emit(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, k) }
func (a *bpfAsm) ret(k uint32)  { a.emit(unix.BPF_RET|unix.BPF_K, k) }

func (a *bpfAsm) jeq(k uint32, jt, jf string)  { a.jump(unix.BPF_JEQ, k, jt, jf) }
func (a *bpfAsm) jset(k uint32, jt, jf string) { a.jump(unix.BPF_JSET, k, jt, jf) }

func (a *bpfAsm) jump(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, bpfJump{at: len(a.ins), jt: jt, jf: jf})
	a.emit(unix.BPF_JMP|op|unix.BPF_K, k)
}

func (a *bpfAsm) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	a.labels[name] = len(a.ins)
}

// assemble resolves the jumps; a label behind its jump or more than 255
// instructions ahead is an error (classic BPF jumps forward only).
func (a *bpfAsm) assemble() ([]unix.SockFilter, error) {
	off := func(from int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := a.labels[name]
		d := to - from - 1
		if !ok || d < 0 || d > 255 {
			return 0, fmt.Errorf("bpf: jump to %q out of range", name)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		jt, err := off(j.at, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(j.at, j.jf)
		if err != nil {
			return nil, err
		}
		a.ins[j.at].Jt, a.ins[j.at].Jf = jt, jf
	}
	if len(a.ins) > 4096 {
		return nil, errors.New("bpf: program too long")
	}
	return a.ins, nil
}
