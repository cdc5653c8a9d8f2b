package process

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// Issue 30: what a command can reach besides files. The probes are
// testdata/reach.py, run by the system's Python inside the domain; each
// prints ALLOWED or REFUSED <errno>.

const systemPython = "/usr/bin/python3"

// reachProbe copies the probe script into dir (inside the domain).
func reachProbe(t *testing.T, dirs ...string) {
	t.Helper()
	if _, err := os.Stat(systemPython); err != nil {
		t.Fatalf("the reach tests need %s: %v", systemPython, err)
	}
	b, err := os.ReadFile("testdata/reach.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "reach.py"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// probe runs one probe in a command of group on root and returns its
// verdict line(s).
func (a *appliance) probe(t *testing.T, group, root string, args ...string) string {
	t.Helper()
	q := make([]string, len(args))
	for i, s := range args {
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	_, out := a.run(t, group, root, false, systemPython+" reach.py "+strings.Join(q, " ")+" 2>&1")
	return strings.TrimSpace(out)
}

// loopbackTCP listens on loopback and counts what connects and sends.
func loopbackTCP(t *testing.T, proto string) (port string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	if proto == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 100)
			for {
				if _, _, err := pc.ReadFrom(buf); err != nil {
					return
				}
				hits.Add(1)
			}
		}()
		return strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port), hits
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), serveCounting(t, ln, "")
}

// unixServer listens on path (mode 0777, as docker.sock's group makes it
// for its members) and answers every connection with reply.
func unixServer(t *testing.T, path, reply string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	return serveCounting(t, ln, reply)
}

// serveCounting accepts on ln until the test ends, answers each
// connection with reply and counts them.
func serveCounting(t *testing.T, ln net.Listener, reply string) *atomic.Int32 {
	t.Cleanup(func() { ln.Close() })
	hits := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			_, _ = c.Write([]byte(reply))
			c.Close()
		}
	}()
	return hits
}

func wantVerdict(t *testing.T, name, got string, allowed bool) {
	t.Helper()
	ok := strings.HasSuffix(got, "ALLOWED")
	if allowed && !ok {
		t.Errorf("%s: want ALLOWED, got %q", name, got)
	}
	if !allowed && (ok || !strings.Contains(got, "REFUSED")) {
		t.Errorf("%s: want REFUSED, got %q", name, got)
	}
	if strings.Contains(got, "SECRET") {
		t.Errorf("%s: a secret reached the command: %q", name, got)
	}
}

// TestSandboxReachNetwork: under DenyNetwork no IPv4 or IPv6 socket at
// all (MPTCP walked past Landlock's TCP rules, UDP was never covered);
// with the network allowed TCP and UDP work and MPTCP, SCTP, raw and
// packet sockets are still refused.
func TestSandboxReachNetwork(t *testing.T) {
	tcpPort, tcpHits := loopbackTCP(t, "tcp")
	udpPort, udpHits := loopbackTCP(t, "udp")
	for _, deny := range []bool{true, false} {
		a := newAppliance(t, Options{Sandbox: SandboxOptions{DenyNetwork: deny}})
		reachProbe(t, a.alpha)
		tcpHits.Store(0)
		udpHits.Store(0)
		mode := map[bool]string{true: "deny", false: "allow"}[deny]
		for _, c := range []struct {
			probe, arg string
			allowed    bool
		}{
			{"mptcp-connect", tcpPort, false},
			{"mptcp-listen", "", false},
			{"sctp", "", false},
			{"raw", "", false},
			{"packet", "", false},
			{"tcp", tcpPort, !deny},
			{"udp", udpPort, !deny},
			{"route-netlink", "", true},
		} {
			wantVerdict(t, mode+" "+c.probe, a.probe(t, "execA", a.alpha, c.probe, c.arg), c.allowed)
		}
		time.Sleep(100 * time.Millisecond) // the UDP datagram, if one was sent
		if deny && (tcpHits.Load() != 0 || udpHits.Load() != 0) {
			t.Errorf("deny: the loopback listeners were reached: tcp %d, udp %d", tcpHits.Load(), udpHits.Load())
		}
		if !deny && (tcpHits.Load() != 1 || udpHits.Load() != 1) {
			t.Errorf("allow: tcp %d, udp %d connections, want 1 each", tcpHits.Load(), udpHits.Load())
		}
	}
}

// TestSandboxReachUnixSockets: a command connects only to Unix sockets
// inside its own writable domain. Grant B's agent in B's scratch, a
// docker.sock stand-in outside every domain, the same through a symlink
// in A's own scratch and after finding it in /proc: refused, read-only
// and with the network denied too. A's own socket, by absolute and
// relative path and through a symlink, works; so does ssh-agent.
func TestSandboxReachUnixSockets(t *testing.T) {
	a := newAppliance(t, Options{Sandbox: SandboxOptions{DenyNetwork: true}})
	if a.m.Sandbox().UnixSockets != UnixSocketsGate {
		t.Fatalf("unix sockets %q, want the gate", a.m.Sandbox().UnixSockets)
	}
	reachProbe(t, a.alpha, a.beta)
	// Grant B's command holds an agent in its scratch directory.
	bHome := strings.TrimSpace(func() string { _, out := a.run(t, "execB", a.beta, false, `echo "$HOME"`); return out }())
	agent := filepath.Join(bHome, "agent.sock")
	agentHits := unixServer(t, agent, "SECRET-agent-of-B")
	outside := filepath.Join(t.TempDir(), "docker.sock")
	dockerHits := unixServer(t, outside, "SECRET-docker")

	for _, c := range []struct {
		name, cmd string
		readOnly  bool
	}{
		{"B's agent by path", "reach.py unix-connect " + agent, false},
		{"B's agent, read-only", "reach.py unix-connect " + agent, true},
		{"docker.sock stand-in", "reach.py unix-connect " + outside, false},
		{"through a symlink in own scratch", `ln -s ` + outside + ` "$TMPDIR/d.sock" && ` + systemPython + ` reach.py unix-connect "$TMPDIR/d.sock"`, false},
		{"relative, from own scratch", `cd "$TMPDIR" && ln -s ` + outside + ` r.sock && ` + systemPython + ` "$OLDPWD/reach.py" unix-connect r.sock`, false},
		{"abstract name", "reach.py unix-abstract devspace-test", false},
		// The Projects lie under /tmp here, so /tmp is not private: a
		// command that makes its private-/tmp source a symlink to the
		// /tmp it sees gains nothing.
		{"private /tmp source swapped for /tmp", `rm -rf "$HOME/.tmp" && ln -s /tmp "$HOME/.tmp" && ` + systemPython + ` reach.py unix-connect ` + outside, false},
	} {
		cmd := c.cmd
		if strings.HasPrefix(cmd, "reach.py") {
			cmd = systemPython + " " + cmd
		}
		_, out := a.run(t, "execA", a.alpha, c.readOnly, cmd+" 2>&1")
		wantVerdict(t, c.name, strings.TrimSpace(out), false)
	}
	if agentHits.Load() != 0 || dockerHits.Load() != 0 {
		t.Errorf("a socket outside the domain was reached: agent %d, docker %d", agentHits.Load(), dockerHits.Load())
	}
	// Datagram Unix sockets name a path on every send: none at all.
	wantVerdict(t, "unix datagram", a.probe(t, "execA", a.alpha, "unix-dgram"), false)
	wantVerdict(t, "unix datagram pair", a.probe(t, "execA", a.alpha, "unix-dgram-pair"), false)
	// Its own sockets work.
	wantVerdict(t, "own socket", a.probe(t, "execA", a.alpha, "unix-own"), true)
	wantVerdict(t, "socketpair", a.probe(t, "execA", a.alpha, "socketpair"), true)
	if _, err := exec.LookPath("ssh-agent"); err == nil {
		code, out := a.run(t, "execA", a.alpha, false,
			`eval "$(ssh-agent -a "$TMPDIR/a.sock")" >/dev/null && ssh-add -l; rc=$?; kill "$SSH_AGENT_PID"; exit $rc`)
		// 1: "The agent has no identities" (it answered); 2: no agent.
		if code != 1 {
			t.Errorf("ssh-agent in the command's scratch: exit %d %q", code, out)
		}
	}
}

// TestSandboxReachProc: the machine's sockets and connections are not
// listed to a command (/proc/self/net, /proc/net, NETLINK_SOCK_DIAG); what
// programs read of themselves still is.
func TestSandboxReachProc(t *testing.T) {
	a := newAppliance(t, Options{})
	reachProbe(t, a.alpha)
	marker := filepath.Join(t.TempDir(), "marker-devspace.sock")
	unixServer(t, marker, "x")
	for _, f := range []string{"/proc/$$/net/unix", "/proc/$$/net/tcp", "/proc/$$/task/$$/net/unix", "/proc/self/net/unix", "/proc/net/tcp"} {
		code, out := a.run(t, "execA", a.alpha, false, "cat "+f)
		if code == 0 || strings.Contains(out, "marker-devspace") {
			t.Errorf("%s was readable (exit %d): %.200q", f, code, out)
		}
	}
	wantVerdict(t, "sock_diag", a.probe(t, "execA", a.alpha, "sock-diag"), false)
	if _, err := exec.LookPath("ss"); err == nil {
		_, out := a.run(t, "execA", a.alpha, false, "ss -xa 2>&1")
		if strings.Contains(out, "marker-devspace") {
			t.Errorf("ss -xa listed another process's socket: %.300q", out)
		}
	}
	code, out := a.run(t, "execA", a.alpha, false,
		"cat /proc/$$/status /proc/$$/stat /proc/$$/cmdline /proc/$$/limits /proc/$$/maps /proc/$$/mountinfo >/dev/null && ls /proc/$$/fd >/dev/null && readlink /proc/$$/exe")
	if code != 0 {
		t.Errorf("a command cannot read its own /proc entries (exit %d): %q", code, out)
	}
}

// TestSandboxReachIPC: without namespaces of its own (a container under
// its runtime's default seccomp profile) a command gets no SysV IPC, POSIX
// message queues, keyrings, user namespaces, io_uring, bpf or userfaultfd:
// their objects are shared by every grant (and the Owner's shell) and
// outlive the command. Keyrings and the rest stay refused in the namespace
// tier too (TestSandboxReachNamespaces).
func TestSandboxReachIPC(t *testing.T) {
	a := newAppliance(t, Options{Sandbox: SandboxOptions{NamespaceProbe: func() bool { return false }}})
	if got := a.m.Sandbox().IPC; got != IPCRefused {
		t.Fatalf("ipc %q", got)
	}
	reachProbe(t, a.alpha)
	for _, p := range []string{"shm", "sem", "msg", "mq", "keyring", "io_uring", "bpf", "userfaultfd"} {
		wantVerdict(t, p, a.probe(t, "execA", a.alpha, p), false)
	}
	for _, cmd := range []string{"unshare -U true", "unshare -r true", "unshare -i true", "ipcmk -M 4096", "ipcmk -S 1", "ipcmk -Q"} {
		if code, out := a.run(t, "execA", a.alpha, false, cmd); code == 0 {
			t.Errorf("%s worked: %q", cmd, out)
		}
	}
}

// TestSandboxReachNamespaces: where unprivileged user namespaces exist
// (this host), each command has IPC, mount and user namespaces of its
// own: SysV IPC works and is private to the command (another grant's
// command does not see its segment, and it is gone with it), /tmp and
// /dev/shm are its own (POSIX semaphores, so multiprocessing.Pool, work
// again), and what the policy refuses besides stays refused.
func TestSandboxReachNamespaces(t *testing.T) {
	// Not under /tmp: a private /tmp would hide the Projects, so it is
	// only made where nothing the command needs lies beneath it.
	base, err := os.MkdirTemp("/var/tmp", "devspace-ns-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(base) })
	t.Setenv("TMPDIR", base)
	a := newAppliance(t, Options{})
	if got := a.m.Sandbox().IPC; got != IPCNamespace {
		t.Fatalf("ipc %q: this host has unprivileged user namespaces", got)
	}
	reachProbe(t, a.alpha, a.beta)
	for _, p := range []string{"keyring", "io_uring", "bpf"} {
		wantVerdict(t, p, a.probe(t, "execA", a.alpha, p), false)
	}
	if code, out := a.run(t, "execA", a.alpha, false, "unshare -U true"); code == 0 {
		t.Errorf("unshare -U worked: %q", out)
	}
	hostSHM := func() string { b, _ := os.ReadFile("/proc/sysvipc/shm"); return string(b) }
	before := hostSHM()
	// A keyed segment, held by a command of grant A while grant B's
	// command looks for it.
	seg := systemPython + ` -c 'import ctypes,time,sys
libc=ctypes.CDLL(None,use_errno=True)
r=libc.shmget(0x5eed, 4096, 0o1600 if sys.argv[1]=="make" else 0)
print("id", r, ctypes.get_errno()); sys.stdout.flush()
if sys.argv[1]=="make" and r>=0: time.sleep(30)' `
	holder, err := a.m.Start(context.Background(), "execA", Spec{Shell: true, Command: seg + "make", Dir: a.alpha, Root: a.alpha,
		Env: BaseEnv(os.Environ()), Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(holder.Head(100)), "id ") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if out := string(holder.Head(100)); !strings.HasPrefix(out, "id 0") && !strings.HasPrefix(out, "id 1") {
		t.Fatalf("a command in its own IPC namespace could not make a segment: %q", out)
	}
	if _, out := a.run(t, "execB", a.beta, false, seg+"find"); !strings.Contains(out, "id -1 2") {
		t.Errorf("grant B's command found A's segment (want ENOENT): %q", out)
	}
	if hostSHM() != before {
		t.Errorf("the command's segment shows in the host's IPC namespace")
	}
	_ = holder.Kill("test")
	waitDone(t, holder, 10*time.Second)
	// Gone with it: the next command of the same execution finds nothing.
	if _, out := a.run(t, "execA", a.alpha, false, seg+"find"); !strings.Contains(out, "id -1 2") {
		t.Errorf("the segment outlived its command: %q", out)
	}
	// Private /tmp and /dev/shm, and what needs them.
	marker := "devspace-ns-" + randomToken(4)
	code, out := a.run(t, "execA", a.alpha, false, "echo x > /tmp/"+marker+" && echo x > /dev/shm/"+marker+" && "+
		systemPython+` -c 'from multiprocessing import Pool
with Pool(2) as p: print("pool", sum(p.map(abs, range(10))))'`)
	if code != 0 || !strings.Contains(out, "pool 45") {
		t.Errorf("private /tmp, /dev/shm and multiprocessing.Pool: exit %d %q", code, out)
	}
	for _, d := range []string{"/tmp", "/dev/shm"} {
		if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
			t.Errorf("the command wrote the host's %s", d)
			_ = os.Remove(filepath.Join(d, marker))
		}
	}
	// Its own Unix sockets in its private /tmp go through the gate.
	code, out = a.run(t, "execA", a.alpha, false, systemPython+` -c 'import socket
s=socket.socket(socket.AF_UNIX); s.bind("/tmp/own.sock"); s.listen()
c=socket.socket(socket.AF_UNIX); c.connect("/tmp/own.sock"); print("connected")'`)
	if code != 0 || !strings.Contains(out, "connected") {
		t.Errorf("a Unix socket in the private /tmp: exit %d %q", code, out)
	}
}

// TestSandboxReachOrdinaryWork: the stricter domain still runs ordinary
// tools: go build with its caches under $HOME, git (a local clone and a
// commit), a venv, make, curl to a loopback server when the network is
// allowed.
func TestSandboxReachOrdinaryWork(t *testing.T) {
	port, hits := loopbackTCP(t, "tcp")
	// go test puts its toolchain's bin first on PATH.
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	goroot := strings.TrimSpace(string(out))
	a := newAppliance(t, Options{Sandbox: SandboxOptions{ReadPaths: []string{goroot}}})
	cmds := []string{
		// A toolchain with its caches under $HOME (host mode).
		`printf 'package main\nfunc main() { println("built") }\n' > main.go && printf 'module m\ngo 1.26\n' > go.mod && ` +
			`GOCACHE="$HOME/gocache" GOPATH="$HOME/gopath" CGO_ENABLED=0 ` + filepath.Join(goroot, "bin", "go") + ` build -o "$TMPDIR/m" . && "$TMPDIR/m" 2>&1 | grep -q built`,
		`git init -q src && cd src && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m one && cd .. && git clone -q src dst && git -C dst log --oneline | grep -q one`,
		systemPython + ` -m venv --without-pip "$TMPDIR/venv" && "$TMPDIR/venv/bin/python" -c 'print(1)'`,
	}
	if _, err := exec.LookPath("make"); err == nil {
		cmds = append(cmds, `printf 'all:\n\techo made\n' > Makefile && make | grep -q made`)
	}
	if _, err := exec.LookPath("curl"); err == nil {
		cmds = append(cmds, "curl -s -m 5 http://127.0.0.1:"+port+"/ ; test $? -ne 7")
	}
	for _, cmd := range cmds {
		if code, out := a.run(t, "execA", a.alpha, false, cmd+" 2>&1"); code != 0 {
			t.Errorf("%s: exit %d %q", cmd, code, out)
		}
	}
	if _, err := exec.LookPath("curl"); err == nil && hits.Load() == 0 {
		t.Error("curl did not reach the loopback server")
	}
}

// TestSandboxReachWithoutGate: where pidfd_getfd is refused (Docker's
// default seccomp profile without SYS_PTRACE listed) commands get no Unix
// socket but socketpair's: nothing to connect with, so nothing outside
// the domain either.
func TestSandboxReachWithoutGate(t *testing.T) {
	a := newAppliance(t, Options{Sandbox: SandboxOptions{GateProbe: func() bool { return false }, NamespaceProbe: func() bool { return false }}})
	if got := a.m.Sandbox().UnixSockets; got != UnixSocketsPairOnly {
		t.Fatalf("unix sockets %q", got)
	}
	reachProbe(t, a.alpha)
	outside := filepath.Join(t.TempDir(), "docker.sock")
	hits := unixServer(t, outside, "SECRET-docker")
	wantVerdict(t, "docker.sock stand-in", a.probe(t, "execA", a.alpha, "unix-connect", outside), false)
	wantVerdict(t, "own socket", a.probe(t, "execA", a.alpha, "unix-own"), false)
	wantVerdict(t, "socketpair", a.probe(t, "execA", a.alpha, "socketpair"), true)
	wantVerdict(t, "shm", a.probe(t, "execA", a.alpha, "shm"), false)
	if hits.Load() != 0 {
		t.Errorf("the socket outside the domain was reached %d times", hits.Load())
	}
}

// TestSandboxReachGateSwapRace: a command swaps a symlink in its scratch
// between its own socket and one outside its domain while connecting
// through it, over and over. The Gate connects to the inode it checked,
// so the outside socket is never reached, while the own one is.
func TestSandboxReachGateSwapRace(t *testing.T) {
	a := newAppliance(t, Options{})
	outside := filepath.Join(t.TempDir(), "docker.sock")
	hits := unixServer(t, outside, "SECRET-docker")
	script := `import os, socket, sys, threading
d = os.environ["TMPDIR"]
own = os.path.join(d, "own.sock")
srv = socket.socket(socket.AF_UNIX); srv.bind(own); srv.listen(128)
def serve():
    while True:
        c, _ = srv.accept(); c.sendall(b"own"); c.close()
threading.Thread(target=serve, daemon=True).start()
link = os.path.join(d, "l.sock")
stop = False
def swap():
    i = 0
    while not stop:
        tmp = link + ".tmp"
        try: os.unlink(tmp)
        except FileNotFoundError: pass
        os.symlink(own if i % 2 else sys.argv[1], tmp)
        os.rename(tmp, link)
        i += 1
threading.Thread(target=swap, daemon=True).start()
got = {}
for _ in range(3000):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(link)
        v = s.recv(100).decode()
    except OSError as e:
        v = "refused"
    got[v] = got.get(v, 0) + 1
    s.close()
stop = True
print(got)
`
	if err := os.WriteFile(filepath.Join(a.alpha, "race.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := a.run(t, "execA", a.alpha, false, systemPython+" race.py "+outside+" 2>&1")
	if code != 0 || strings.Contains(out, "SECRET") || hits.Load() != 0 {
		t.Fatalf("the swap race reached the outside socket (exit %d, %d hits): %s", code, hits.Load(), out)
	}
	if !strings.Contains(out, "'own'") || !strings.Contains(out, "'refused'") {
		t.Errorf("the race did not exercise both sides: %s", out)
	}
}

// TestSandboxReachGateKill: a command stuck in a connect the Gate performs
// (a listener whose backlog is full) is killed like any other, and the
// Gate lets go of the connect when the tree is gone.
func TestSandboxReachGateKill(t *testing.T) {
	a := newAppliance(t, Options{})
	script := `import os, socket
p = os.path.join(os.environ["TMPDIR"], "full.sock")
srv = socket.socket(socket.AF_UNIX); srv.bind(p); srv.listen(0)
held = []
print("connecting", flush=True)
while True:
    c = socket.socket(socket.AF_UNIX); c.connect(p); held.append(c)
`
	if err := os.WriteFile(filepath.Join(a.alpha, "full.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := a.m.Start(context.Background(), "execA", Spec{Program: systemPython, Args: []string{"full.py"}, Dir: a.alpha,
		Root: a.alpha, Env: BaseEnv(os.Environ())})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(p.Head(100)), "connecting") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // now blocked in a connect
	if st := p.State(); st.Status != StatusRunning {
		t.Fatalf("the command is not blocked in a connect: %+v %q", st, p.Head(1000))
	}
	start := time.Now()
	if err := p.Kill("test"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p, 10*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("kill took %v", d)
	}
	// The supervisor is free for the next command.
	if code, out := a.run(t, "execA", a.alpha, false, "echo next"); code != 0 || !strings.Contains(out, "next") {
		t.Errorf("next command: %d %q", code, out)
	}
}

// TestConfineReach: DevSpace's own Git (Manager.Confine) gets the system
// call policy with no network at all and no Unix socket but socketpair's:
// a filter a repository plants cannot send a datagram, reach an agent or
// leave an IPC object, and ConfineMain's own /proc (its net/ included) is
// outside the domain.
func TestConfineReach(t *testing.T) {
	m := newTestManager(t, Options{}, false)
	if m.Sandbox().Mode != SandboxLandlock {
		t.Skip("no Landlock on this kernel")
	}
	dir := t.TempDir()
	reachProbe(t, dir)
	udpPort, udpHits := loopbackTCP(t, "udp")
	tcpPort, tcpHits := loopbackTCP(t, "tcp")
	outside := filepath.Join(t.TempDir(), "agent.sock")
	agentHits := unixServer(t, outside, "SECRET-agent")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(systemPython, append([]string{filepath.Join(dir, "reach.py")}, args...)...)
		cmd.Dir = dir
		if err := m.Confine(cmd, sandbox.Policy{ReadExec: []string{dir}}); err != nil {
			t.Fatal(err)
		}
		out, _ := cmd.CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		probe, arg string
		allowed    bool
	}{
		{"udp", udpPort, false},
		{"tcp", tcpPort, false},
		{"unix-connect", outside, false},
		{"unix-socket", "", false},
		{"route-netlink", "", false},
		{"shm", "", false},
		{"keyring", "", false},
		{"socketpair", "", true},
		{"read", "/proc/" + strconv.Itoa(os.Getpid()) + "/net/unix", false},
	} {
		wantVerdict(t, "confined "+c.probe, run(c.probe, c.arg), c.allowed)
	}
	// ConfineMain's own entries: the probe's parent.
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/$PPID/net/unix /proc/$PPID/status")
	if err := m.Confine(cmd, sandbox.Policy{}); err != nil {
		t.Fatal(err)
	}
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("confined program read ConfineMain's /proc: %.200q", out)
	}
	time.Sleep(100 * time.Millisecond)
	if udpHits.Load()+tcpHits.Load()+agentHits.Load() != 0 {
		t.Errorf("confined program reached: udp %d, tcp %d, agent %d", udpHits.Load(), tcpHits.Load(), agentHits.Load())
	}
}
