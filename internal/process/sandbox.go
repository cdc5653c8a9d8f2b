package process

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// SandboxOptions configures how commands are confined (docs/design.md §1). The
// zero value confines every command in a Landlock domain with the best ABI
// the kernel offers, allows the network, and refuses commands
// (ErrSandboxUnavailable) where the kernel has no Landlock.
type SandboxOptions struct {
	// Off runs commands with the server's own rights
	// (DEVSPACE_COMMAND_SANDBOX=off): an explicit, logged risk.
	Off bool
	// DenyNetwork refuses every IPv4 and IPv6 socket of a command, TCP,
	// UDP and ping alike (DEVSPACE_COMMAND_NETWORK=deny; the system call
	// policy, and Landlock's TCP rules from ABI 4 on). Unix sockets inside
	// the command's domain and NETLINK_ROUTE remain.
	DenyNetwork bool
	// ReadPaths are hierarchies commands may read and execute besides
	// sandbox.SystemPaths (toolchains installed elsewhere); default none.
	ReadPaths []string
	// ScratchDir holds one private scratch directory per group
	// (execution), the command's HOME and TMPDIR, removed by KillGroup and
	// Shutdown; default $TMPDIR/devspace-scratch. Its leftovers are
	// removed by New.
	ScratchDir string
	// ToolsDir holds one persistent tool home per Project (ToolHome of
	// Spec.Tools): a workspaceWrite command's HOME, installed tools and
	// caches, read and executed by a readOnly one; never emptied by the
	// Manager. Empty: no tool homes, and HOME is the scratch directory.
	ToolsDir string
	// Probe replaces sandbox.Probe; tests use it to force "unavailable".
	Probe func() sandbox.Status
	// GateProbe replaces sandbox.GateAvailable; tests use it to try the
	// socketpair-only tier.
	GateProbe func() bool
	// NamespaceProbe replaces sandbox.NamespacesAvailable; tests use it
	// to try the tier without namespaces.
	NamespaceProbe func() bool
}

// SandboxState is what /readyz, doctor, the startup log and the
// devspace_command_sandbox_info metric report.
type SandboxState struct {
	// Mode is "landlock" (commands are confined), "off" (the owner turned
	// confinement off) or "unavailable" (commands are refused).
	Mode string
	// Status is the kernel's Landlock offer (also when Mode is "off").
	Status sandbox.Status
	// Rules lists the enforced rules (sandbox.Features.String); "" unless
	// Mode is "landlock".
	Rules string
	// DenyNetwork is SandboxOptions.DenyNetwork; NetworkEnforced whether
	// it is enforced (the system call policy refuses every IPv4 and IPv6
	// socket; Landlock ABI 4 also refuses TCP).
	DenyNetwork     bool
	NetworkEnforced bool
	// UnixSockets says how a command reaches path-named Unix sockets:
	// "gate" (only inside its writable domain: sandbox.Gate), or
	// "socketpair_only" where pidfd_getfd is refused (a container whose
	// seccomp profile allows it only with CAP_SYS_PTRACE listed): commands
	// then have socketpair's Unix sockets and no other. "" unless Mode is
	// "landlock".
	UnixSockets string
	// IPC is "namespace" where each command gets user, mount and IPC
	// namespaces of its own (sandbox.NamespaceAttr: a host with
	// unprivileged user namespaces): private /tmp and /dev/shm, and SysV
	// IPC and POSIX message queues of its own; "refused" elsewhere (a
	// container under its runtime's default seccomp profile), where the
	// system call policy refuses them. Keyrings are refused in both. ""
	// unless Mode is "landlock".
	IPC string
}

// How commands reach Unix sockets (SandboxState.UnixSockets) and IPC
// (SandboxState.IPC).
const (
	UnixSocketsGate     = "gate"
	UnixSocketsPairOnly = "socketpair_only"
	IPCRefused          = "refused"
	IPCNamespace        = "namespace"
)

// Sandbox modes.
const (
	SandboxLandlock    = "landlock"
	SandboxOff         = "off"
	SandboxUnavailable = "unavailable"
)

// SandboxStateOf probes the kernel (through o.Probe when set) and returns
// the state a Manager built with o would report; callers that must decide
// before the Manager exists (which scopes to offer) use it.
func SandboxStateOf(o SandboxOptions) SandboxState {
	probe := o.Probe
	if probe == nil {
		probe = sandbox.Probe
	}
	st := SandboxState{Status: probe(), DenyNetwork: o.DenyNetwork}
	switch {
	case o.Off:
		st.Mode = SandboxOff
	case !st.Status.Available():
		st.Mode = SandboxUnavailable
	default:
		st.Mode = SandboxLandlock
		f := st.Status.Features()
		st.UnixSockets, st.IPC = UnixSocketsPairOnly, IPCRefused
		namespaces := o.NamespaceProbe
		if namespaces == nil {
			namespaces = sandbox.NamespacesAvailable
		}
		if namespaces() {
			st.IPC = IPCNamespace
		}
		gate := o.GateProbe
		if gate == nil {
			gate = sandbox.GateAvailable
		}
		if gate() {
			f.UnixGate = true
			st.UnixSockets = UnixSocketsGate
		}
		st.Rules = f.String()
		st.NetworkEnforced = o.DenyNetwork && f.Syscalls
	}
	return st
}

// Sandbox returns the confinement state, fixed at New.
func (m *Manager) Sandbox() SandboxState { return m.sandbox }

// scratchPath is group's scratch directory.
func (m *Manager) scratchPath(group string) string {
	sum := sha256.Sum256([]byte(group))
	return filepath.Join(m.opts.Sandbox.ScratchDir, hex.EncodeToString(sum[:12]))
}

// scratchDir returns group's scratch directory, creating it (0700).
func (m *Manager) scratchDir(group string) (string, error) {
	dir := m.scratchPath(group)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("%w: create the scratch directory: %v", ErrSpawn, err)
	}
	return dir, nil
}

// removeScratch deletes group's scratch directory, making its tree
// writable first (a command may have left read-only directories).
func (m *Manager) removeScratch(group string) { removeTree(m.scratchPath(group)) }

// emptyDir removes what dir holds and keeps dir itself: a command of the
// group starting meanwhile has its Landlock rule on dir's inode, which a
// new directory of the same name would not be.
func emptyDir(dir string) {
	_ = os.Chmod(dir, 0o700) // a command may have made it read-only
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		removeTree(filepath.Join(dir, e.Name()))
	}
}

func removeTree(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// policy is the Landlock domain of one command: the system read-only, its
// Project root and its tool home read-write (read and execute only for a
// ReadOnly spec), its scratch directory read-write, nothing else.
func (m *Manager) policy(l launch, scratch string) *sandbox.Policy {
	p := &sandbox.Policy{
		ReadExec: append(sandbox.SystemPaths(), m.opts.Sandbox.ReadPaths...),
		// A command's own read paths lie in a Project another command may
		// rewrite: never followed through a symlink.
		ReadExecNoSymlinks: l.readPaths,
		ReadWrite:          []string{scratch},
		ReadFiles:          sandbox.ReadablePaths(),
		Devices:            sandbox.DevicePaths(),
		Network:            !m.opts.Sandbox.DenyNetwork,
		RouteNetlink:       true,
		GateUnix:           m.sandbox.UnixSockets == UnixSocketsGate,
	}
	if m.sandbox.IPC == IPCNamespace {
		p.PrivateTmp, p.PrivateIPC = scratch, true
	}
	own := []string{l.root}
	if l.tools != "" {
		own = append(own, l.tools)
	}
	if l.readOnly {
		p.ReadExec = append(p.ReadExec, own...)
	} else {
		p.ReadWrite = append(p.ReadWrite, own...)
	}
	return p
}
