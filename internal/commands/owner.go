package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/secret"
)

// The Owner's view: every grant's commands, for the console. These
// methods take no caller: the Owner sees and stops any command. They
// never serve a tool.

// Running is a command whose tree is alive, as the Owner's listing shows
// it. CommandLine is what the command was asked to run, with every literal
// credential the secret detector finds replaced (secret.Redact); it is
// untrusted text.
type Running struct {
	ProcessRef, GrantID, ProjectRef, CommandLine string
	StartedAt                                    time.Time
}

// RunningAll lists the commands of every grant whose tree is alive,
// oldest first.
func (s *Service) RunningAll() []Running {
	s.table.mu.Lock()
	es := make([]*entry, 0, len(s.table.byRef))
	for _, e := range s.table.byRef {
		es = append(es, e)
	}
	s.table.mu.Unlock()
	out := make([]Running, 0, len(es))
	for _, e := range es {
		if e.p == nil {
			continue
		}
		st := e.p.State()
		if !st.TreeAlive {
			continue
		}
		out = append(out, Running{ProcessRef: e.ref, GrantID: e.grantID, ProjectRef: e.projectRef,
			CommandLine: e.commandLine, StartedAt: st.StartedAt})
	}
	slices.SortFunc(out, func(a, b Running) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ProcessRef, b.ProcessRef)
	})
	return out
}

// OwnerTail returns the last bytes (at most max, cut to whole UTF-8
// characters at the start and made valid) a command of any grant wrote,
// how many it wrote in all, and whether it ended: a running command's
// from memory, a finished one's from its retained output.
// Errors: ErrNotFound when no command has that processRef (its output
// retired, or never one); ErrOutputGone, a failed retention lookup.
func (s *Service) OwnerTail(ctx context.Context, processRef string, max int) (tail string, total int64, done bool, err error) {
	if max <= 0 {
		return "", 0, false, fmt.Errorf("tail of %d bytes", max)
	}
	s.table.mu.Lock()
	e := s.table.byRef[processRef]
	s.table.mu.Unlock()
	var out outputSource
	var st process.State
	switch {
	case e != nil:
		out, st = e.out, e.state()
	case s.opts.Outputs != nil:
		rec, lerr := s.opts.Outputs.LookupOwner(ctx, processRef)
		if errors.Is(lerr, ErrNoOutputRecord) {
			return "", 0, false, ErrNotFound
		}
		if lerr != nil {
			return "", 0, false, fmt.Errorf("look up retained output: %w", lerr)
		}
		out, st = s.opts.Outputs.Output(rec), RecordState(rec)
	default:
		return "", 0, false, ErrNotFound
	}
	b := out.Tail(max)
	if len(b) == max {
		// Cut a character the bound split at the start.
		for i := 0; i < len(b) && i < 3 && b[0]&0xC0 == 0x80; i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), st.OutputBytes, st.Status != process.StatusRunning, nil
}

// OwnerInterrupt interrupts a running command of any grant, as
// write_stdin's interrupt does (SIGINT to its tree; what it leaves alive
// is killed shortly after, process.Process.Interrupt), and returns the
// grant it ran for. Errors: ErrNotFound when no command in memory has
// that processRef; process.ErrNotRunning when it ended.
func (s *Service) OwnerInterrupt(processRef string) (grantID string, err error) {
	s.table.mu.Lock()
	e := s.table.byRef[processRef]
	s.table.mu.Unlock()
	if e == nil || e.p == nil {
		return "", ErrNotFound
	}
	if !e.p.State().TreeAlive {
		return e.grantID, process.ErrNotRunning
	}
	return e.grantID, e.p.Interrupt()
}

// commandLine is what the Owner is shown of a command: the shell command,
// or the program and its arguments quoted where they need it, with
// literal credentials replaced. The pieces were each checked at start
// (checkSecrets), but a credential can span arguments once they are
// joined ("Authorization:" "Bearer" "…"); Redact sees the joined line.
func commandLine(c Command) string {
	if c.Shell {
		return secret.Redact(c.Command)
	}
	parts := make([]string, 0, 1+len(c.Args))
	for _, a := range append([]string{c.Program}, c.Args...) {
		parts = append(parts, shellQuote(a))
	}
	return secret.Redact(strings.Join(parts, " "))
}

// shellQuote quotes s as a shell word when it holds anything but plainly
// safe characters: single quotes, or a $"…" with Go escapes when it holds
// control characters (shown escaped, never raw; for reading only).
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "$" + strconv.Quote(s) // control characters shown escaped, never raw
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
