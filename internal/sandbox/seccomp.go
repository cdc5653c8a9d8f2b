package sandbox

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysClone3 is clone3's number on every architecture: Linux numbers the
// system calls added since 5.3 alike everywhere (i386 and arm compat
// tables included).
const sysClone3 = 435

// x32Bit marks the x32 ABI's system call numbers on x86-64.
const x32Bit = 0x40000000

// denyClone3 installs a seccomp filter on the calling thread, inherited
// across exec, under which clone3 fails with ENOSYS. clone3 can start a
// child in any cgroup it names by a descriptor (CLONE_INTO_CGROUP), and
// Landlock does not cover O_PATH descriptors nor this system call, so a
// confined command could otherwise place processes outside its cgroup.
// ENOSYS is what C libraries and runtimes fall back to clone on (container
// runtimes' default profiles answer the same). no_new_privs must be set.
func denyClone3() error {
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: ^uint32(x32Bit)},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: sysClone3, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0)
	runtime.KeepAlive(prog)
	return err
}
