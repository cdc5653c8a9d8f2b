package sandbox

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock up to ABI 7 does not mediate connect() to a path-named Unix
// socket: a command could reach another grant's agent in its scratch
// directory, the Owner's ssh-agent or /var/run/docker.sock. The Gate
// closes that. A domain restricted with Policy.GateUnix stops in every
// connect (seccomp RET_USER_NOTIF) until the Gate, running outside the
// domain, answers. The Gate never lets the kernel go on with the
// program's own arguments (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read
// them from memory another thread can rewrite in between); it reads the
// address once, takes a copy of the program's socket (pidfd_getfd) and
// connects that socket itself:
//
//   - a Unix socket to a path: the path is resolved as the program would
//     (from its working directory or root; a final symlink followed), the
//     object found is pinned by an O_PATH descriptor, and the socket is
//     connected to exactly that inode (through /proc/self/fd/N), once its
//     path lies inside one of the domain's writable hierarchies. A path
//     swapped after the look-up changes nothing: the pinned inode is what
//     is connected to, and it was checked. Elsewhere: EACCES.
//   - a Unix socket to an abstract name: EACCES (the Gate's own connect
//     would not be scoped the way the domain's is).
//   - any other socket (TCP, UDP, netlink: families the system call
//     policy allowed) is connected with the copied address, as the kernel
//     would have.
//
// The peer sees the Gate's process as the one that connected
// (SO_PEERCRED), under the same user.

// maxGateInflight bounds the connects one Gate performs at once (a TCP
// connect may wait for minutes); further ones wait in the kernel.
const maxGateInflight = 32

// Gate serves the connects of one confined program tree. Its methods are
// safe for concurrent use.
type Gate struct {
	listener int
	allowed  []string
	// privateTmp is Policy.PrivateTmp; privateOnce adds to allowed the
	// private /tmp and /dev/shm the tree really has (privateTargets), at
	// its first connect.
	privateTmp  string
	privateOnce sync.Once
	wake        int // eventfd that stops the loop
	slots       chan struct{}
	loop        sync.WaitGroup // the receive loop
	handlers    sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	inflight map[int]bool // copies of the program's sockets being connected
}

// ServeGate answers the connects of the tree restricted with listener
// (Restrict's) until Close, or until no process of the tree remains.
// writable are the domain's ReadWrite hierarchies: a path-named Unix
// socket is reachable only beneath one of them, or in the private /tmp
// and /dev/shm that privateTmp (Policy.PrivateTmp, or "") gave it. It
// takes ownership of listener.
func ServeGate(listener int, writable []string, privateTmp string) (*Gate, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(listener)
		return nil, err
	}
	g := &Gate{listener: listener, wake: wake, slots: make(chan struct{}, maxGateInflight), inflight: map[int]bool{},
		privateTmp: privateTmp}
	for _, p := range writable {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			g.allowed = append(g.allowed, filepath.Clean(c))
		}
	}
	g.loop.Add(1)
	go g.serve()
	return g, nil
}

// Close stops the Gate: connects under way are aborted (their sockets
// shut down), pending ones fail with ENOSYS once the listener is closed.
// It is idempotent.
func (g *Gate) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	for fd := range g.inflight {
		_ = unix.Shutdown(fd, unix.SHUT_RDWR)
	}
	g.mu.Unlock()
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(g.wake, one[:])
	g.loop.Wait()
	g.handlers.Wait()
	unix.Close(g.listener)
	unix.Close(g.wake)
}

// seccompNotif is struct seccomp_notif; seccompNotifResp struct
// seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

func (g *Gate) serve() {
	defer g.loop.Done()
	fds := []unix.PollFd{{Fd: int32(g.listener), Events: unix.POLLIN}, {Fd: int32(g.wake), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			return // POLLHUP: no process of the tree is left
		}
		var n seccompNotif
		if err := g.ioctl(unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if err == unix.EINTR || err == unix.ENOENT {
				continue // the caller died meanwhile
			}
			return
		}
		c, errno := g.prepare(&n)
		if errno != 0 {
			g.answer(n.ID, errno)
			continue
		}
		if !c.mayBlock() {
			// Most connects: performed here, without a goroutine and
			// the thread hand-offs it costs.
			g.answer(n.ID, g.rawConnect(c.sock, c.addr))
			c.close()
			continue
		}
		// A blocking TCP connect may wait for minutes: the tree's other
		// connects go on meanwhile.
		g.slots <- struct{}{}
		g.handlers.Add(1)
		go func() {
			defer func() { <-g.slots; g.handlers.Done() }()
			g.answer(n.ID, g.rawConnect(c.sock, c.addr))
			c.close()
		}()
	}
}

// answer returns errno (0: success) as the result of notification id;
// ENOENT (the caller died meanwhile) is ignored.
func (g *Gate) answer(id uint64, errno unix.Errno) {
	resp := seccompNotifResp{ID: id, Error: -int32(errno)}
	_ = g.ioctl(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// pendingConnect is a connect ready to be performed: a copy of the
// program's socket and the address, with the pinned Unix socket's
// descriptor (or -1) that the address names through /proc/self/fd.
type pendingConnect struct {
	sock, target int
	addr         []byte
	unix         bool
}

func (c *pendingConnect) close() {
	unix.Close(c.sock)
	if c.target >= 0 {
		unix.Close(c.target)
	}
}

// mayBlock reports whether the connect can wait long: only a blocking
// socket of another family than AF_UNIX (a Unix connect waits only for
// a listener of the domain's own whose backlog is full).
func (c *pendingConnect) mayBlock() bool {
	if c.unix {
		return false
	}
	fl, err := unix.FcntlInt(uintptr(c.sock), unix.F_GETFL, 0)
	return err != nil || fl&unix.O_NONBLOCK == 0
}

func (g *Gate) ioctl(req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// valid reports whether the notification is still pending: its thread
// has not died and its ID was not reused since (anything opened through
// its PID before this check was that thread's).
func (g *Gate) valid(id uint64) bool {
	return g.ioctl(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// errGone is the answer when the calling thread cannot be found any
// more: it died (the answer then goes nowhere) or its PID was reused.
const errGone = unix.ECONNABORTED

// sockaddrMax is sizeof(struct sockaddr_storage): the kernel refuses a
// longer address.
const sockaddrMax = 128

// prepare reads notification n's connect and returns what to perform,
// or the errno to answer.
func (g *Gate) prepare(n *seccompNotif) (*pendingConnect, unix.Errno) {
	if n.Nr != unix.SYS_CONNECT {
		return nil, unix.ENOSYS
	}
	fd, alen := int(int32(n.Args[0])), int(int32(n.Args[2]))
	if alen < 0 || alen > sockaddrMax {
		return nil, unix.EINVAL
	}
	addr := make([]byte, alen)
	if alen > 0 {
		got, err := unix.ProcessVMReadv(int(n.PID), []unix.Iovec{{Base: &addr[0], Len: uint64(alen)}},
			[]unix.RemoteIovec{{Base: uintptr(n.Args[1]), Len: alen}}, 0)
		if err != nil || got != alen {
			if !g.valid(n.ID) {
				return nil, errGone
			}
			return nil, unix.EFAULT
		}
	}
	pidfd, err := openThread(int(n.PID))
	if err != nil {
		return nil, errGone
	}
	defer unix.Close(pidfd)
	if !g.valid(n.ID) {
		return nil, errGone // the PID was another thread's by the time it was opened
	}
	sock, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil, errnoOf(err, unix.EBADF)
	}
	c := &pendingConnect{sock: sock, target: -1, addr: addr}
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		c.close()
		return nil, errnoOf(err, unix.ENOTSOCK)
	}
	if domain != unix.AF_UNIX {
		return c, 0
	}
	c.unix = true
	if errno := g.unixTarget(n, c); errno != 0 {
		c.close()
		return nil, errno
	}
	return c, 0
}

// unixTarget checks c's Unix address and points it at the pinned socket.
func (g *Gate) unixTarget(n *seccompNotif, c *pendingConnect) unix.Errno {
	addr := c.addr
	if len(addr) < 2 || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX {
		return unix.EINVAL
	}
	name := addr[2:]
	if len(name) == 0 {
		return unix.EINVAL
	}
	if name[0] == 0 {
		return unix.EACCES // abstract
	}
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	target, errno := g.resolve(n, string(name))
	if errno != 0 {
		return errno
	}
	c.target = target
	via := []byte("/proc/self/fd/" + strconv.Itoa(target))
	c.addr = make([]byte, 2+len(via)+1)
	binary.NativeEndian.PutUint16(c.addr, unix.AF_UNIX)
	copy(c.addr[2:], via)
	return 0
}

// resolve looks up path as the calling thread would (from its working
// directory, or its root for an absolute path; every symlink followed
// but /proc's magic links, which would name the Gate's own descriptors)
// and returns an O_PATH descriptor of the socket found, if it lies
// inside the domain's writable hierarchies.
func (g *Gate) resolve(n *seccompNotif, path string) (int, unix.Errno) {
	proc := "/proc/" + strconv.FormatUint(uint64(n.PID), 10)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	base := proc + "/cwd"
	if strings.HasPrefix(path, "/") {
		base = proc + "/root"
		how.Resolve |= unix.RESOLVE_IN_ROOT
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errGone
	}
	defer unix.Close(dir)
	if !g.valid(n.ID) {
		return -1, errGone
	}
	if g.privateTmp != "" {
		// The serve loop is the only caller: no other goroutine reads
		// allowed meanwhile.
		g.privateOnce.Do(func() { g.allowed = append(g.allowed, privateTargets(proc, g.privateTmp)...) })
	}
	obj, err := unix.Openat2(dir, path, &how)
	if err != nil {
		return -1, errnoOf(err, unix.ENOENT)
	}
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(obj)
		return -1, unix.ECONNREFUSED // what connect says of a file that is no socket
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(obj))
	if err != nil || !g.inside(real) {
		unix.Close(obj)
		return -1, unix.EACCES
	}
	return obj, 0
}

// inside reports whether p lies beneath an allowed hierarchy.
func (g *Gate) inside(p string) bool {
	if !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return false
	}
	for _, a := range g.allowed {
		if p == a || strings.HasPrefix(p, a+"/") || a == "/" {
			return true
		}
	}
	return false
}

// rawConnect connects sock to the raw address, as the program asked,
// unless the Gate is closing.
func (g *Gate) rawConnect(sock int, addr []byte) unix.Errno {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return unix.ECONNABORTED
	}
	g.inflight[sock] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.inflight, sock)
		g.mu.Unlock()
	}()
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(len(addr)))
	return errno
}

// openThread returns a pidfd of thread tid (PIDFD_THREAD, Linux 6.9),
// or of its thread group before 6.9: the descriptor table it reaches is
// the same unless the thread was cloned without CLONE_FILES.
func openThread(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != unix.EINVAL {
		return fd, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			tgid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1, err
			}
			return unix.PidfdOpen(tgid, 0)
		}
	}
	return -1, unix.ESRCH
}

// GateAvailable reports whether a Gate can work here: it needs
// pidfd_getfd, which container runtimes' default seccomp profiles allow
// only to containers that list CAP_SYS_PTRACE (the server need not hold
// it: the same-user ptrace rules still apply).
func GateAvailable() bool {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, 0, 0)
	if err != nil && err != unix.EBADF {
		return false
	}
	if err == nil {
		unix.Close(fd)
	}
	return true
}

func errnoOf(err error, fallback unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return fallback
}
