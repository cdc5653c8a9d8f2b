# Probes for TestSandboxReach: each prints "ALLOWED" when the operation
# worked and "REFUSED <errno name>" when the kernel refused it.
import ctypes
import errno
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86-64 system call numbers (the probes run on the test machine).
NR = {"add_key": 248, "keyctl": 250, "io_uring_setup": 425, "mq_open": 240,
      "shmget": 29, "semget": 64, "msgget": 68, "bpf": 321, "userfaultfd": 323}


def sys_call(name, *args):
    r = libc.syscall(NR[name], *args)
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def probe(what, arg):
    if what == "tcp":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(("127.0.0.1", int(arg)))
        s.sendall(b"hello")
    elif what == "mptcp-connect":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
        s.settimeout(5)
        s.connect(("127.0.0.1", int(arg)))
        s.sendall(b"hello")
    elif what == "mptcp-listen":
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
        s.bind(("127.0.0.1", 0))
        s.listen()
    elif what == "sctp":
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)
    elif what == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"udp-from-command", ("127.0.0.1", int(arg)))
    elif what == "raw":
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    elif what == "packet":
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    elif what == "sock-diag":
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)
    elif what == "route-netlink":
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    elif what == "unix-connect":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(arg)
        data = s.recv(100)
        print("GOT", data.decode())
    elif what == "unix-socket":
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    elif what == "unix-dgram":
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    elif what == "unix-dgram-pair":
        socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    elif what == "unix-abstract":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect("\0" + arg)
    elif what == "unix-own":
        # A server and a client of the command's own, in its scratch.
        path = os.path.join(os.environ["TMPDIR"], "own.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen()
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        a, _ = srv.accept()
        a.sendall(b"own")
        assert c.recv(10) == b"own"
        # And through a relative path and a symlink inside the domain.
        os.chdir(os.environ["TMPDIR"])
        os.symlink("own.sock", "link.sock")
        for name in ("own.sock", "link.sock"):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(name)
            srv.accept()[0].close()
    elif what == "socketpair":
        a, b = socket.socketpair()
        a.sendall(b"x")
        assert b.recv(1) == b"x"
    elif what == "shm":
        sys_call("shmget", 0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT|0600
    elif what == "sem":
        sys_call("semget", 0, 1, 0o1600)
    elif what == "msg":
        sys_call("msgget", 0, 0o1600)
    elif what == "mq":
        sys_call("mq_open", b"devspace-test", os.O_CREAT | os.O_RDWR, 0o600, None)
    elif what == "keyring":
        sys_call("add_key", b"user", b"devspace-test", b"token-of-grant", 14, ctypes.c_long(-4))
    elif what == "io_uring":
        params = ctypes.create_string_buffer(120)
        sys_call("io_uring_setup", 4, params)
    elif what == "bpf":
        sys_call("bpf", 0, None, 0)
    elif what == "userfaultfd":
        sys_call("userfaultfd", 0)
    elif what == "read":
        with open(arg) as f:
            f.read()
    else:
        raise SystemExit("unknown probe " + what)


try:
    probe(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
    print("ALLOWED")
except OSError as e:
    print("REFUSED", errno.errorcode.get(e.errno, str(e.errno)) if e.errno else str(e))
