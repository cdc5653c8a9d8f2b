package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// The hostile grant of `make load LOAD_HOSTILE=1` (issue 31): a grant
// with project:read and process:execute only — the first
// attacker, whose readOnly commands can write nothing but their scratch
// directory — approved for hostileProjects of the ordinary grants'
// Projects. One session per Project repeats a round of attacks for as
// long as its phase lasts.
var hostileScopes = []string{"project:read", "process:execute"}

// hostileProjects is how many ordinary grants' Projects the hostile grant
// shares: enough to claim its whole share of the server's command slots.
const hostileProjects = commands.MaxPerGrant / commands.MaxPerGrantPerProject

// The attacks, shell commands. The fork loop aims at 1,000 processes that
// sleep 5 s: the per-command limit (hostilePidsMax) stops it, and its own
// bound keeps the machine the benchmark shares safe if the limit did not.
const (
	hostileFill  = `head -c 2G /dev/zero > "$TMPDIR/fill"`
	hostileFlood = "yes | head -c 200M"
	hostileFork  = "for i in $(seq 1000); do sleep 5 & done; wait"
	hostileHold  = "sleep 600"
)

// hostileHoldFor is how long a round holds every slot it got before it
// interrupts its commands and starts the next round.
const hostileHoldFor = 3 * time.Second

// The hostile run's limits. The scratch is a tmpfs of its own, so that
// the fills never reach the machine's disk, and no larger than the hostile
// grant's executions' quotas together, so that the disk guard has to act
// as well as the quota. The process limit is TestForkLoopCapped's (auto
// would be half of this machine's).
const (
	hostileScratchFS  = 1 << 30
	hostileScratchMax = "256MiB"
	hostileReserve    = "128MiB"
	hostilePidsMax    = "64"
)

// hostileSegments is how often each phase runs: the phases alternate,
// without and with the hostile grant, so that drift of the shared machine
// and of the server's state (executions, retained output) falls on both.
const hostileSegments = 2

// hostileEnv is the server configuration of a hostile run: its scratch
// directory on a tmpfs mounted for the run (root only).
func hostileEnv(t testing.TB) map[string]string {
	return map[string]string{
		"DEVSPACE_SCRATCH_DIR":      testutil.SmallFS(t, hostileScratchFS),
		"DEVSPACE_SCRATCH_MAX":      hostileScratchMax,
		"DEVSPACE_DISK_RESERVE":     hostileReserve,
		"DEVSPACE_COMMAND_PIDS_MAX": hostilePidsMax,
		// To compare priorities: DEVSPACE_COMMAND_NICE=0 make load LOAD_HOSTILE=1
		// (empty: the default).
		"DEVSPACE_COMMAND_NICE": os.Getenv("DEVSPACE_COMMAND_NICE"),
	}
}

// hostileReport compares the ordinary grants' calls without and with the
// hostile grant, and says what the hostile grant got.
type hostileReport struct {
	// Projects are the ordinary grants' Projects the hostile grant is
	// approved for too, with Scopes.
	Projects []string `json:"projects"`
	Scopes   []string `json:"scopes"`
	// Segments lists the phases in the order they ran, Segment long each.
	Segments []string `json:"segments"`
	Segment  string   `json:"segment"`
	// Limits are the hostile run's scratch filesystem and settings.
	Limits   string      `json:"limits"`
	Baseline phaseReport `json:"baseline"`
	Hostile  phaseReport `json:"hostile"`
	// SharedBaseline and SharedHostile are the calls of the ordinary
	// grants whose Project the hostile grant shares (part of Baseline and
	// Hostile): slots and the Project's lock are theirs to lose.
	SharedBaseline phaseReport `json:"sharedBaseline"`
	SharedHostile  phaseReport `json:"sharedHostile"`
	// P99Ratio is, per tool, the ordinary grants' p99 with the hostile
	// grant over their p99 without it; MaxRatio is the bound the run is
	// held to (-hostile-max-ratio).
	P99Ratio map[string]float64 `json:"p99Ratio"`
	MaxRatio float64            `json:"maxRatio"`
	// Grant counts the hostile grant's attacks by action and outcome:
	// "fill: started", "fill: killed scratch_quota", "hold: process_limit".
	Grant map[string]int `json:"grant"`
}

// compareHostile runs the ordinary load in 2×hostileSegments segments of
// -duration/hostileSegments, alternately without and with h, recording
// every ordinary call in all as well. It returns the comparison, the
// ordinary calls made and the time they took.
func (l *load) compareHostile(h *hostileGrant, all *tally) (*hostileReport, int64, time.Duration) {
	seg := *flagDuration / hostileSegments
	rep := &hostileReport{Projects: h.labels, Scopes: hostileScopes, Segment: seg.String(), MaxRatio: *flagMaxRatio,
		Limits: fmt.Sprintf("scratch on a %d MiB tmpfs; DEVSPACE_SCRATCH_MAX %s, DEVSPACE_DISK_RESERVE %s, DEVSPACE_COMMAND_PIDS_MAX %s",
			hostileScratchFS>>20, hostileScratchMax, hostileReserve, hostilePidsMax)}
	phases := [2]struct {
		t, shared *tally
		calls     int64
		elapsed   time.Duration
		cpu       float64
	}{{t: newTally(), shared: newTally()}, {t: newTally(), shared: newTally()}}
	var calls int64
	var elapsed time.Duration
	for i := range 2 * hostileSegments {
		hostile := i % 2
		prefix := fmt.Sprintf("b%d-", i)
		ctx, cancel := context.WithCancel(context.Background())
		var attacks sync.WaitGroup
		if hostile == 1 {
			prefix = fmt.Sprintf("h%d-", i)
			attacks.Go(func() { h.run(ctx, prefix) })
		}
		ph := &phases[hostile]
		cpu := cpuSeconds(l.srv.PID())
		n, d := l.phase(prefix, seg, func(g int, tool, code string, d time.Duration) {
			all.record(tool, code, d)
			ph.t.record(tool, code, d)
			if g < len(h.labels) {
				ph.shared.record(tool, code, d)
			}
		})
		cancel()
		attacks.Wait()
		ph.cpu += cpuSeconds(l.srv.PID()) - cpu
		ph.calls += n
		ph.elapsed += d
		calls += n
		elapsed += d
		rep.Segments = append(rep.Segments, [2]string{"baseline", "hostile"}[hostile])
		// The next segment starts with no command running.
		settle(l.t, l.srv, nil, 30*time.Second)
	}
	rep.Baseline = phases[0].t.phase(phases[0].calls, phases[0].elapsed)
	rep.Hostile = phases[1].t.phase(phases[1].calls, phases[1].elapsed)
	rep.Baseline.ServerCPU, rep.Hostile.ServerCPU = round(phases[0].cpu, 1), round(phases[1].cpu, 1)
	rep.SharedBaseline = phases[0].shared.phase(0, phases[0].elapsed)
	rep.SharedHostile = phases[1].shared.phase(0, phases[1].elapsed)
	rep.P99Ratio = map[string]float64{}
	for tool, b := range rep.Baseline.Tools {
		if b.P99 > 0 {
			rep.P99Ratio[tool] = round(rep.Hostile.Tools[tool].P99/b.P99, 2)
		}
	}
	rep.Grant = h.outcomes()
	return rep, calls, elapsed
}

// check fails the test when the hostile grant changed what the ordinary
// grants got beyond the bounds, or when an attack never ran.
func (r *hostileReport) check(t testing.TB) {
	t.Helper()
	if r.Hostile.Unexpected > 0 {
		t.Errorf("with the hostile grant, the ordinary grants had %d unexpected errors: %v", r.Hostile.Unexpected, r.Hostile.Errors)
	}
	for tool, ratio := range r.P99Ratio {
		if ratio > r.MaxRatio {
			t.Errorf("%s: p99 %.0f ms with the hostile grant, %.0f ms without: %.2f× (at most %.2f×)",
				tool, r.Hostile.Tools[tool].P99, r.Baseline.Tools[tool].P99, ratio, r.MaxRatio)
		}
	}
	for _, action := range []string{"fill", "flood", "fork", "hold"} {
		if r.Grant[action+": started"] == 0 {
			t.Errorf("the hostile grant never started its %s: %v", action, r.Grant)
		}
	}
}

// hostileGrant is the hostile grant: its token and Projects, and what its
// attacks got. It is safe for concurrent use.
type hostileGrant struct {
	t      testing.TB
	srv    *server
	token  string
	labels []string
	refs   []string

	mu  sync.Mutex
	got map[string]int
}

func newHostileGrant(t testing.TB, srv *server, labels []string) *hostileGrant {
	_, tok := grant(t, srv, labels, hostileScopes)
	refs := projectRefs(t, srv, tok.AccessToken)
	h := &hostileGrant{t: t, srv: srv, token: tok.AccessToken, labels: labels, got: map[string]int{}}
	for _, l := range labels {
		h.refs = append(h.refs, refs[l])
	}
	return h
}

func (h *hostileGrant) note(action, outcome string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got[action+": "+outcome]++
}

func (h *hostileGrant) outcomes() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.got)
}

// run attacks from two sessions per Project, round after round, until
// ctx ends; then it interrupts the commands still running.
func (h *hostileGrant) run(ctx context.Context, prefix string) {
	var wg sync.WaitGroup
	for i, ref := range h.refs {
		wg.Go(func() {
			name := fmt.Sprintf("%sevil%d", prefix, i)
			a := &attacker{h: h, s: openSession(h.t, h.srv, h.token, name, ref), name: name}
			a.filler = &attacker{h: h, s: openSession(h.t, h.srv, h.token, name+"-fill", ref), name: name + "-fill"}
			defer a.s.Close()
			defer a.filler.s.Close()
			for ctx.Err() == nil {
				a.round(ctx)
			}
			a.interrupt(context.Background())
			a.filler.interrupt(context.Background())
		})
	}
	wg.Wait()
}

// attacker is one session of the hostile grant.
type attacker struct {
	h    *hostileGrant
	s    *session
	name string
	ops  int
	// filler is the session (an execution of its own) that fills its
	// scratch: the quota stops every command of the execution past it,
	// which would end the other attacks with the fill.
	filler *attacker
}

// round starts the fill, the flood and the fork loop, takes every slot
// left with sleeps, waits for the three attacks to end, takes the slots
// they freed, holds them for hostileHoldFor and interrupts everything.
func (a *attacker) round(ctx context.Context) {
	type started struct {
		a           *attacker
		action, ref string
	}
	var running []started
	for _, c := range []struct {
		a               *attacker
		action, command string
	}{{a.filler, "fill", hostileFill}, {a, "flood", hostileFlood}, {a, "fork", hostileFork}} {
		if ref := c.a.start(ctx, c.action, c.command); ref != "" {
			running = append(running, started{c.a, c.action, ref})
		}
	}
	a.hold(ctx)
	for _, r := range running {
		r.a.wait(ctx, r.action, r.ref)
	}
	a.hold(ctx)
	select {
	case <-ctx.Done():
	case <-time.After(hostileHoldFor):
	}
	a.interrupt(ctx)
}

// hold starts sleeps until one is refused (past the grant's share).
func (a *attacker) hold(ctx context.Context) {
	for range commands.MaxPerProject {
		if a.start(ctx, "hold", hostileHold) == "" {
			return
		}
	}
}

// start runs command and returns its processRef while it runs, "" when
// it was refused or ended within exec_command's wait.
func (a *attacker) start(ctx context.Context, action, command string) string {
	a.ops++
	r, err := a.s.call(ctx, "exec_command", map[string]any{"operationId": fmt.Sprintf("%s-%d", a.name, a.ops),
		"shell": true, "command": command, "timeoutMs": 600_000})
	switch {
	case ctx.Err() != nil:
		return ""
	case err != nil:
		a.h.note(action, "transport_error")
		return ""
	case r.IsError:
		a.h.note(action, r.Code())
		return ""
	}
	a.h.note(action, "started")
	if r.SC["status"] != "running" {
		a.h.note(action, outcome(r.SC))
		return ""
	}
	ref, _ := r.SC["processRef"].(string)
	return ref
}

// wait polls a command until it ends and notes how it ended; once ctx
// has ended, it reads the command once more and notes its state then.
func (a *attacker) wait(ctx context.Context, action, ref string) {
	for {
		ended := ctx.Err() != nil
		poll := ctx
		if ended {
			var cancel context.CancelFunc
			poll, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
		}
		r, err := a.s.call(poll, "read_process_output", map[string]any{"processRef": ref, "mode": "tail", "limit": 1})
		switch {
		case err != nil && !ended && ctx.Err() != nil:
			continue // ctx ended under the call
		case err != nil:
			a.h.note(action, "transport_error")
		case r.IsError:
			a.h.note(action, "read: "+r.Code())
		case r.SC["status"] != "running":
			a.h.note(action, outcome(r.SC))
		case ended:
			a.h.note(action, "running at the phase's end")
		default:
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		return
	}
}

// interrupt stops the session's commands.
func (a *attacker) interrupt(ctx context.Context) {
	r, err := a.s.call(ctx, "project_control", map[string]any{"action": "interrupt"})
	switch {
	case ctx.Err() != nil:
	case err != nil:
		a.h.note("interrupt", "transport_error")
	case r.IsError:
		a.h.note("interrupt", r.Code())
	}
}

// outcome names how a command ended: its status, kill reason and exit
// code ("killed scratch_quota", "exited 0").
func outcome(sc map[string]any) string {
	o := fmt.Sprint(sc["status"])
	if k, _ := sc["killReason"].(string); k != "" {
		o += " " + k
	}
	if c, ok := sc["exitCode"]; ok {
		o += fmt.Sprint(" ", c)
	}
	return o
}

func printHostile(r *hostileReport) {
	w := os.Stdout
	fmt.Fprintf(w, "\nHostile grant (%s) on %s: %s, %s each\n\n", strings.Join(r.Scopes, " "), strings.Join(r.Projects, ", "),
		strings.Join(r.Segments, ", "), r.Segment)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "tool\tcalls without\tp99 ms\tcalls with\tp99 ms\tp99 ratio\tits Projects' grants: p99 without\twith\t")
	var tools []string
	for k := range r.Baseline.Tools {
		tools = append(tools, k)
	}
	sort.Strings(tools)
	for _, k := range tools {
		b, h := r.Baseline.Tools[k], r.Hostile.Tools[k]
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%.1f\t%.2f\t%.1f\t%.1f\t\n", k, b.Calls, b.P99, h.Calls, h.P99, r.P99Ratio[k],
			r.SharedBaseline.Tools[k].P99, r.SharedHostile.Tools[k].P99)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nordinary calls/s %.1f without, %.1f with (p99 ratio bound %.2f); server CPU %.1f s without, %.1f s with\n",
		r.Baseline.CallsPerSec, r.Hostile.CallsPerSec, r.MaxRatio, r.Baseline.ServerCPU, r.Hostile.ServerCPU)
	fmt.Fprintf(w, "ordinary errors without: %d unexpected; %v\n", r.Baseline.Unexpected, r.Baseline.Errors)
	fmt.Fprintf(w, "ordinary errors with:    %d unexpected; %v\n", r.Hostile.Unexpected, r.Hostile.Errors)
	fmt.Fprintf(w, "of which its Projects' grants: without %v; with %v\n", r.SharedBaseline.Errors, r.SharedHostile.Errors)
	var got []string
	for k, v := range r.Grant {
		got = append(got, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(got)
	fmt.Fprintf(w, "the hostile grant got: %s\n", strings.Join(got, "; "))
	fmt.Fprintf(w, "limits: %s\n", r.Limits)
}
