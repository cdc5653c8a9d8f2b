// Package process runs commands for DevSpace and guarantees their cleanup.
// It knows nothing of MCP: callers pass plain Specs and get Processes.
//
// # Shape
//
// The Manager (in the server) runs every command under a supervisor: a
// re-exec of the devspace binary (`devspace __supervise`, see
// SupervisorMain) that is the command's parent and a child subreaper, so
// every descendant — setsid daemons, double forks, children of a wrapper
// that exited — re-parents to it and stays attributable to the command.
// Starting the ~50 MB server binary costs milliseconds, so the Manager keeps
// a few supervisors started ahead of need (Options.IdleSupervisors) and
// reuses one whose command's tree has ended cleanly; the command's stdio
// reaches the supervisor as SCM_RIGHTS over its control socket
// (protocol.go).
//
// # Confinement
//
// The command's main process starts as a launcher (`devspace __launch`,
// LauncherMain), which each supervisor starts ahead of need. It receives
// the command's stdio and spec, calls setsid, enters the command's Landlock
// domain (internal/sandbox: the system read-only, the Project root
// read-write or read-only per Spec.ReadOnly, the execution's scratch
// directory as HOME and TMPDIR, TCP refused with
// SandboxOptions.DenyNetwork, signals and abstract sockets scoped) on its
// own thread and execs the command, so the supervisor and the server stay
// outside the domain. Where the kernel has no Landlock, Start answers
// ErrSandboxUnavailable unless SandboxOptions.Off.
//
// # Lifecycle
//
// A command runs in its own session and process group (with the pty as
// controlling terminal when Spec.TTY is set) and, when a delegated cgroup
// v2 is writable (CgroupAvailable), in its own cgroup, which exists before
// the command does: its launcher was started in it. The main process may
// exit while descendants live on: State.Status then reports the main
// process's result and State.TreeAlive stays true until the last
// descendant is gone, which Process.Done signals (hold the Project's write
// lease until then). Descendants are not killed when the main process
// exits; Spec.Timeout, Kill, KillGroup and Shutdown end them.
//
//   - Interrupt sends SIGINT to the process group and to every descendant;
//     what is still alive after Options.InterruptGrace (background jobs of
//     a non-interactive shell ignore SIGINT) is killed as Kill does.
//   - Kill (timeout, close, revoke, shutdown) sends SIGTERM and SIGCONT to
//     the group and every descendant, waits Options.Grace, then sends
//     SIGKILL (and writes cgroup.kill) in rounds until wait4 reports that
//     the supervisor has no child left. A process with a pending SIGKILL
//     cannot fork, so fork loops converge.
//   - If the server dies, the supervisor sees EOF on its control socket and
//     kills the tree. A confined command cannot signal its supervisor; if
//     a supervisor dies anyway, the command's main process dies with it
//     (PR_SET_PDEATHSIG), the server kills the command's process group and
//     cgroup, and with Options.Subreaper the server is a child subreaper:
//     the other descendants re-parent to it and its sweep kills them
//     (subreaper.go). Done fires only once a sweep found none left.
//
// # Output
//
// stdout and stderr are one pipe (like 2>&1), so their interleaving is
// exactly the order of the writes; under a pty they are one stream anyway,
// including the echo of the input. Output goes to a spool file under
// Options.SpoolDir (created 0600 at the first byte), capped per process
// (Spec.MaxOutputBytes, 64 MiB by default), per owner (Spec.Tenant, the
// grant; Options.SpoolShareBytes, a quarter of the total by default) and
// per Manager (Options.MaxSpoolBytes, 1 GiB). Beyond a cap bytes are
// counted and dropped, State.Truncated is set, and the last 64 KiB stay
// in memory for Tail; the first 64 KiB are kept whatever the owner's
// share and the total say, so every command keeps its head and its tail.
// The command keeps running (unless Spec.KillOnOutputLimit) and is never
// blocked by a full pipe. SpoolPressure tells whoever retires finished
// output that a share or the total is near. Memory per process is bounded (a 64 KiB
// read buffer, the 64 KiB tail ring, at most 4 MiB of queued stdin)
// whatever the output rate. Spool files outlive their processes until
// Process.Remove; sweeping old ones at startup is the caller's job.
//
// # Environment and secrets
//
// BaseEnv, MergeEnv and ValidateEnv build a command's environment from an
// allowlist. Literal credentials in command text, arguments and
// environment values are the caller's check (package secret), before
// anything durable is written; BaseEnv uses it to drop proxy variables
// that carry one.
package process
