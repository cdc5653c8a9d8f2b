package app

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/sandbox"
)

// TestDoctorSandboxLines: doctor's sandbox lines for every state a
// server can be in, with their marks (✓ ok, ! warning, ✗ problem).
func TestDoctorSandboxLines(t *testing.T) {
	abi := func(n int) sandbox.Status { return sandbox.Status{ABI: n, Reason: fmt.Sprintf("Landlock ABI %d", n)} }
	none := sandbox.Status{Reason: "the kernel has no Landlock system calls (or a seccomp filter hides them)"}
	state := func(o process.SandboxOptions, st sandbox.Status) process.SandboxState {
		o.Probe = func() sandbox.Status { return st }
		o.GateProbe = func() bool { return true }
		if o.NamespaceProbe == nil {
			o.NamespaceProbe = func() bool { return false }
		}
		return process.SandboxStateOf(o)
	}
	stateNoGate := func(o process.SandboxOptions, st sandbox.Status) process.SandboxState {
		o.Probe = func() sandbox.Status { return st }
		o.GateProbe = func() bool { return false }
		o.NamespaceProbe = func() bool { return false }
		return process.SandboxStateOf(o)
	}
	for _, tt := range []struct {
		name    string
		st      process.SandboxState
		execute bool
		want    []string
	}{
		{"landlock", state(process.SandboxOptions{}, abi(7)), true, []string{
			"✓ commands are confined by Landlock ABI 7 and a system call policy (rules: filesystem,ptrace,refer,truncate,tcp,ioctl_dev,scoped_signals_and_abstract_sockets,syscalls,unix_gate)",
			"✓ commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)",
			"✓ SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=refused: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)",
			"✓ commands may use TCP, UDP and ping sockets; MPTCP, SCTP, raw and packet sockets are refused"}},
		{"landlock abi 1", state(process.SandboxOptions{}, abi(1)), true, []string{
			"✓ commands are confined by Landlock ABI 1 and a system call policy (rules: filesystem,ptrace,syscalls,unix_gate)",
			"✓ commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)",
			"✓ SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=refused: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)",
			"✓ commands may use TCP, UDP and ping sockets; MPTCP, SCTP, raw and packet sockets are refused"}},
		{"network deny", state(process.SandboxOptions{DenyNetwork: true}, abi(4)), true, []string{
			"✓ commands are confined by Landlock ABI 4 and a system call policy (rules: filesystem,ptrace,refer,truncate,tcp,syscalls,unix_gate)",
			"✓ commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)",
			"✓ SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=refused: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)",
			"✓ commands may not create IPv4 or IPv6 sockets: no TCP, UDP, ping or MPTCP (DEVSPACE_COMMAND_NETWORK=deny)"}},
		{"network deny without Landlock TCP rules", state(process.SandboxOptions{DenyNetwork: true}, abi(3)), true, []string{
			"✓ commands are confined by Landlock ABI 3 and a system call policy (rules: filesystem,ptrace,refer,truncate,syscalls,unix_gate)",
			"✓ commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)",
			"✓ SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=refused: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)",
			"✓ commands may not create IPv4 or IPv6 sockets: no TCP, UDP, ping or MPTCP (DEVSPACE_COMMAND_NETWORK=deny)"}},
		{"namespaces", state(process.SandboxOptions{NamespaceProbe: func() bool { return true }}, abi(7)), true, []string{
			"✓ commands are confined by Landlock ABI 7 and a system call policy (rules: filesystem,ptrace,refer,truncate,tcp,ioctl_dev,scoped_signals_and_abstract_sockets,syscalls,unix_gate)",
			"✓ commands connect only to Unix sockets inside their own Project or scratch directory (unix_sockets=gate)",
			"✓ each command has user, mount and IPC namespaces of its own: private /tmp and /dev/shm, SysV IPC and POSIX message queues of its own; keyrings, further namespaces and io_uring are refused (ipc=namespace)",
			"✓ commands may use TCP, UDP and ping sockets; MPTCP, SCTP, raw and packet sockets are refused"}},
		{"no pidfd_getfd", stateNoGate(process.SandboxOptions{}, abi(7)), true, []string{
			"✓ commands are confined by Landlock ABI 7 and a system call policy (rules: filesystem,ptrace,refer,truncate,tcp,ioctl_dev,scoped_signals_and_abstract_sockets,syscalls)",
			"! pidfd_getfd is refused here: commands get no Unix sockets but socketpair's (unix_sockets=socketpair_only); in a container, list SYS_PTRACE in cap_add (the server's user still holds no capability) or use the seccomp profile deploy/seccomp/devspace.json",
			"✓ SysV IPC, POSIX message queues, keyrings, namespaces and io_uring are refused to commands, and /dev/shm is outside their domain (ipc=refused: no unprivileged user namespaces here; a container gets them with the seccomp profile deploy/seccomp/devspace.json, see compose.namespaces.yaml)",
			"✓ commands may use TCP, UDP and ping sockets; MPTCP, SCTP, raw and packet sockets are refused"}},
		{"off", state(process.SandboxOptions{Off: true}, abi(7)), true, []string{
			"! DEVSPACE_COMMAND_SANDBOX=off: RISK, commands run with the server's own rights and can read auth.json, the database, every Project and other commands' environments (Landlock ABI 7 is available)"}},
		{"off without execute", state(process.SandboxOptions{Off: true}, abi(7)), false, []string{
			"✓ DEVSPACE_COMMAND_SANDBOX=off, but process:execute is not offered"}},
		{"unavailable", state(process.SandboxOptions{}, none), true, []string{
			"✗ no Landlock (the kernel has no Landlock system calls (or a seccomp filter hides them)): process:execute is not offered and commands are refused; enable Landlock in the kernel (and allow its system calls in the seccomp profile) or set DEVSPACE_COMMAND_SANDBOX=off at your own risk"}},
		{"unavailable without execute", state(process.SandboxOptions{}, none), false, []string{
			"! no Landlock (the kernel has no Landlock system calls (or a seccomp filter hides them)); commands would be refused if process:execute were offered"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			mark := func(m string) func(string, ...any) {
				return func(format string, a ...any) { got = append(got, m+" "+fmt.Sprintf(format, a...)) }
			}
			doctorSandbox(tt.st, tt.execute, mark("✓"), mark("!"), mark("✗"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("doctor lines (-want +got):\n%s", diff)
			}
		})
	}
}
