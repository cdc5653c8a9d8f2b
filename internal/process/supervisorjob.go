package process

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// One command's run in a supervisor: its spec, its start through a
// launcher, the loop that serves the server's requests until the tree is
// gone, and the report.

// job runs one command to the end of its tree. It reports whether the
// supervisor may wait for another command.
func (s *supervisor) job(stdin, output int, mayReuse bool) bool {
	s.spec = supervisorSpec{}
	s.mainPID, s.cgroupDir, s.sandboxRules, s.orphans = 0, "", "", nil
	s.mainExited, s.exitReported, s.empty = false, false, false
	s.killing, s.limitKill, s.reported, s.looked = false, false, treeUsage{}, treeUsage{}

	rd := bufio.NewReaderSize(s.ctl, 16<<10)
	line, err := readLine(rd, maxSpecBytes)
	if err == nil {
		err = json.Unmarshal(line, &s.spec)
	}
	if err != nil {
		syscall.Close(stdin)
		syscall.Close(output)
		s.send(event{Event: evSpawnError, Error: "invalid supervisor request"})
		return false
	}
	if s.termPending() {
		syscall.Close(stdin)
		syscall.Close(output)
		s.refuse()
		return false
	}
	err = s.spawn(stdin, output)
	syscall.Close(stdin)
	syscall.Close(output)
	if err != nil {
		s.send(event{Event: evSpawnError, Error: spawnMessage(err), Reusable: mayReuse})
		if mayReuse && s.launcher == nil {
			s.launcher, _ = startLauncher(s.spec.NextCgroup, s.launcherOpts)
		}
		return mayReuse
	}
	s.send(event{Event: evStarted, PID: s.mainPID, Cgroup: s.cgroupDir != "", Sandbox: s.sandboxRules})
	// A tree bounded by its supervisor is first looked at once its start
	// is reported, so that looking costs the start nothing.
	var usage *time.Timer
	usageC := make(<-chan time.Time) // never fires without a poll
	if s.polls() {
		s.oomKills = oomKills()
		usage = time.NewTimer(usageFastPoll) // a command often forks as it starts
		defer usage.Stop()
		usageC = usage.C
	}

	// The command's session's autogroup gets its nice (launch tried it
	// once); where the kernel rate-limits the change it is tried again
	// until it holds (commandLimits.Nice).
	var groupNice <-chan time.Time
	if !s.groupNiceSet() {
		t := time.NewTicker(groupNiceRetry)
		defer t.Stop()
		groupNice = t.C
	}

	reqs := make(chan request, 4)
	eof := make(chan struct{})      // the server closed the socket
	stopping := make(chan struct{}) // the tree is gone: drop requests
	quit := make(chan struct{})     // the reader stopped
	go func() {
		defer close(quit)
		for {
			line, err := readLine(rd, 64<<10)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					close(eof)
				}
				return
			}
			var r request
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			select {
			case reqs <- r:
			case <-stopping:
			}
		}
	}()

	grace := time.Duration(s.spec.GraceMS) * time.Millisecond
	serverGone := false
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// escalate fires when an interrupt's grace is over.
	var escalate <-chan time.Time
	var escalateGrace time.Duration
	for {
		s.reap()
		if s.limitKill && !s.empty {
			s.killTree(0)
		}
		if s.empty {
			break
		}
		select {
		case <-usageC:
			began := time.Now()
			next, backoff := s.checkUsage()
			usage.Reset(max(next, time.Duration(backoff)*time.Since(began)))
		case <-escalate:
			escalate = nil
			// SIGINT did not end the tree (background jobs of a
			// non-interactive shell ignore it, daemons may too): nothing
			// may outlive an interrupt.
			if n := s.alive(); n > 0 {
				s.send(event{Event: evEscalated, Killed: n})
				s.killTree(escalateGrace)
			}
		case <-groupNice:
			if s.groupNiceSet() {
				groupNice = nil
			}
		case <-s.chld:
		case <-s.term:
			s.terminated = true
			s.killTree(grace)
		case r := <-reqs:
			switch r.Op {
			case opSignal:
				s.signalTree(syscall.Signal(r.Signal))
			case opKill:
				s.killTree(time.Duration(r.GraceMS) * time.Millisecond)
			case opInterrupt:
				s.signalTree(syscall.SIGINT)
				if escalate == nil {
					escalate = time.After(time.Duration(r.InterruptMS) * time.Millisecond)
					escalateGrace = time.Duration(r.GraceMS) * time.Millisecond
				}
			}
		case <-eof:
			// The server is gone: nobody may outlive it.
			serverGone = true
			s.killTree(grace)
		case <-tick.C:
		}
	}
	if s.gate != nil {
		s.gate.Close()
		s.gate = nil
	}
	if s.cgroupDir != "" {
		_ = cgroupRemove(s.cgroupDir, 2*time.Second)
	}
	// Stop the request reader before reporting, so that it cannot consume
	// the next assignment.
	close(stopping)
	_ = s.ctl.SetReadDeadline(time.Now())
	<-quit
	_ = s.ctl.SetReadDeadline(time.Time{})
	select {
	case <-eof:
		serverGone = true
	default:
	}
	reuse := mayReuse && !serverGone && !s.terminated
	s.send(event{Event: evDone, Orphans: len(s.orphans), Reusable: reuse})
	if reuse && s.launcher == nil {
		// The next command's launcher starts once this command is over
		// (not while it runs: starting it would delay the exit report):
		// a Go binary takes milliseconds to start, confining and exec'ing
		// takes microseconds. It starts in the next command's cgroup.
		s.launcher, _ = startLauncher(s.spec.NextCgroup, s.launcherOpts)
	}
	return reuse
}

// groupNiceSet tries to set the command's autogroup nice and reports
// whether there is nothing more to do (setGroupNice).
func (s *supervisor) groupNiceSet() bool {
	return s.limits.Nice <= 0 || s.mainPID <= 0 || setGroupNice(s.mainPID, s.limits.Nice)
}

// spawn hands the command to the pre-started launcher (or a new one), in
// its own cgroup when asked and possible: the launcher was started in it.
// The launcher's PID is the command's: it execs the command in place.
func (s *supervisor) spawn(stdin, output int) error {
	for attempt := 0; ; attempt++ {
		l := s.launcher
		s.launcher = nil
		if l != nil && l.forCgroup != s.spec.Cgroup {
			// Started for another cgroup than the server named: not
			// this command's.
			l.stop()
			l = nil
		}
		if l == nil {
			var err error
			if l, err = startLauncher(s.spec.Cgroup, s.launcherOpts); err != nil {
				return err
			}
		}
		s.cgroupDir = l.cgroup
		rules, gate, err := l.launch(s.spec, stdin, output)
		if err == nil {
			s.mainPID, s.sandboxRules = l.pid, rules
			if gate >= 0 {
				p := s.spec.Sandbox
				// The command runs already: a Gate that cannot start
				// leaves its connects failing (ENOSYS), never open.
				s.gate, _ = sandbox.ServeGate(gate, append(append([]string(nil), p.ReadWrite...), p.ReadWriteNoSymlinks...), p.PrivateTmp)
			}
			return nil
		}
		// The launcher exits after a failure (or is gone): reap it and
		// remove its cgroup, so that nothing of this attempt is left.
		l.stop()
		s.cgroupDir = ""
		if !errors.Is(err, errLauncherGone) || attempt > 0 {
			return err
		}
	}
}

// spawnMessage turns an exec error into a message without host paths.
func spawnMessage(err error) string {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return "the program or the working directory does not exist"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied"
	case errors.Is(err, syscall.ENOEXEC):
		return "the program is not an executable this system can run"
	case errors.Is(err, syscall.ENOTDIR):
		return "a path component is not a directory"
	case errors.Is(err, syscall.E2BIG):
		return "the argument list and environment are too long"
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.ENOMEM):
		return "the system cannot create more processes now"
	}
	var le launchError
	if errors.As(err, &le) {
		return le.msg
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "the command could not be started"
}
