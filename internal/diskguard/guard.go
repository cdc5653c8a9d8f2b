// Package diskguard keeps one grant's commands from filling the disks
// every grant and the Owner share. It watches the free space of
// the filesystems holding the state directory, the scratch directories
// and the Projects commands run in. Below the reserve it stops the
// execution writing the most there (its scratch directory emptied when it
// lies there); below a quarter of the reserve Check refuses new commands
// and patches there (ErrDiskLow). It also holds each execution's scratch
// directory to its quota, stopping and emptying one that passes it, and
// each Project's tool home to its own, stopping the commands that make
// one grow past it and leaving its files.
//
// The bounds are polled, so they overshoot by what a writer writes between
// two polls (Options.Tick/4 once a filesystem has less than twice the
// reserve free; the quota's scan every Options.ScanEvery, or at once when
// the scratch filesystem lost 64 MiB): the reserve absorbs that. When a
// writer outruns the polls anyway, a Check that finds its filesystem
// below the refusal line wakes the guard and waits for it to stop the
// writer (Options.ReclaimWait) before it refuses: one grant's writes do
// not refuse another grant's command for as long as the guard can
// reclaim the space.
package diskguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/process"
)

// ErrDiskLow is returned by Check for a path whose filesystem has less
// free space than a quarter of the reserve (disk_low).
var ErrDiskLow = fault.New("disk_low", "disk space low")

// Commands is the process manager's side.
type Commands interface {
	// Commands lists the live commands (with what they wrote).
	Commands() []process.Running
	// StopGroup kills an execution's commands, emptying its scratch
	// directory when asked, and leaves the execution open.
	StopGroup(group, reason string, empty bool) int
	// StartedGroups returns the scratch directories of the executions
	// whose commands started since its last call.
	StartedGroups() map[string]process.GroupScratch
	// StartedTools returns the tool homes written by commands that
	// started since its last call.
	StartedTools() []string
	// StopTools kills every command that may write a tool home, and
	// leaves its files.
	StopTools(dir, reason string) int
}

// Metrics receives the guard's measurements.
type Metrics interface {
	// DiskFree reports the free bytes of a watched filesystem by role:
	// "state", "scratch", "tools" or "project" (the least free Project's).
	DiskFree(role string, free int64)
	// ScratchLargest reports the largest scratch directory in use.
	ScratchLargest(bytes int64)
}

// Defaults.
const (
	DefaultTick       = 20 * time.Millisecond
	DefaultScanEvery  = time.Second
	DefaultMaxEntries = 500_000
	// DefaultReclaimWait is how long Check waits for the guard to bring a
	// low filesystem back above the refusal line.
	DefaultReclaimWait = time.Second
	// DefaultToolsScanEvery is how often a tool home written by a live
	// command is measured, in a goroutine of its own: less often than
	// scratch, since toolchains and their caches are many files.
	DefaultToolsScanEvery = 5 * time.Second
	// DefaultToolsMaxEntries bounds a tool home's entries counted in one
	// measure; one holding more is over its quota.
	DefaultToolsMaxEntries = 1_000_000
	// scanOnDrop: a scratch filesystem that lost this much free space
	// since the last scan is scanned again at once.
	scanOnDrop = 64 << 20
)

// Options configure a Guard.
type Options struct {
	// Reserve is the free space kept on every watched filesystem;
	// ScratchMax bounds one grant's scratch directories together.
	Reserve, ScratchMax int64
	// StateDir and ScratchBase are watched always; Projects lists the
	// Project roots (watched too).
	StateDir, ScratchBase string
	// ToolsBase holds the Projects' tool homes (watched too; "" when
	// none); ToolsMax bounds each of them (0: not bounded).
	ToolsBase string
	ToolsMax  int64
	// ToolsScanEvery (default DefaultToolsScanEvery) and ToolsMaxEntries
	// (default DefaultToolsMaxEntries) are the tool homes' Options.ScanEvery
	// and Options.MaxEntries.
	ToolsScanEvery  time.Duration
	ToolsMaxEntries int
	Projects        func() []string
	Commands        Commands
	Log             *slog.Logger
	Metrics         Metrics
	Tick, ScanEvery time.Duration
	// MaxEntries bounds a scratch directory's entries counted in one
	// scan; a directory holding more is over its quota.
	MaxEntries int
	// RestoreReserve, when set, re-creates the state directory's reserve
	// (store.RestoreReserve) after an emergency write used it; the guard
	// calls it about once a second while the state filesystem has the
	// reserve free.
	RestoreReserve func() bool
	// ReclaimWait is how long Check waits for the guard to reclaim space
	// before it refuses (default DefaultReclaimWait; negative: not at
	// all).
	ReclaimWait time.Duration
}

// Guard enforces the reserve and the scratch quota. It is safe for
// concurrent use.
type Guard struct {
	opts Options
	log  *slog.Logger
	// wake asks Run to look now: a Check found a filesystem low.
	wake chan struct{}

	// Run's goroutine only: the low filesystem's baseline, and the
	// scratch directories of the groups running at the last scan and of
	// those that ended just before it.
	base           *baseline
	running, ended map[string]process.GroupScratch
	sizes          map[string]sized // every execution's scratch at its last measure
	// runTools' goroutine only: the tool homes written at the last
	// measure, and each tool home's size at its last measure (one entry
	// per Project written since the guard began).
	toolsRunning map[string]bool
	toolSizes    map[string]int64
	toolsStopped map[string]bool // stopped at the last measure: its next one only measures

	mu      sync.Mutex
	largest int64 // the largest scratch directory at the last scan
	stopped map[string]int
}

// New returns a Guard; Run enforces it.
func New(opts Options) *Guard {
	if opts.Tick <= 0 {
		opts.Tick = DefaultTick
	}
	if opts.ScanEvery <= 0 {
		opts.ScanEvery = DefaultScanEvery
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Projects == nil {
		opts.Projects = func() []string { return nil }
	}
	if opts.ReclaimWait == 0 {
		opts.ReclaimWait = DefaultReclaimWait
	}
	if opts.ToolsScanEvery <= 0 {
		opts.ToolsScanEvery = DefaultToolsScanEvery
	}
	if opts.ToolsMaxEntries <= 0 {
		opts.ToolsMaxEntries = DefaultToolsMaxEntries
	}
	return &Guard{opts: opts, log: opts.Log.With("component", "diskguard"), stopped: map[string]int{}, wake: make(chan struct{}, 1)}
}

// Check returns ErrDiskLow (wrapped, naming the role, never the path) when
// the filesystem of a path has less free space than a quarter of the
// reserve: new commands and patches there are refused. Each look asks the
// kernel (statfs, about a microsecond). A filesystem below the line
// wakes the guard, and Check looks again every Options.Tick for up to
// Options.ReclaimWait (or until ctx ends): a writer that outran the
// guard's polls is stopped and its scratch emptied in that time, and the
// caller — often another grant — is not refused for it.
func (g *Guard) Check(ctx context.Context, paths ...string) error {
	err := g.check(paths)
	if err == nil || g.opts.ReclaimWait < 0 {
		return err
	}
	select {
	case g.wake <- struct{}{}:
	default:
	}
	deadline := time.NewTimer(g.opts.ReclaimWait)
	defer deadline.Stop()
	tick := time.NewTicker(g.opts.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return err
		case <-deadline.C:
			return err
		case <-tick.C:
			if err = g.check(paths); err == nil {
				return nil
			}
		}
	}
}

// check is one look of Check.
func (g *Guard) check(paths []string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if free, ok := freeBytes(p); ok && free < g.opts.Reserve/4 {
			return fmt.Errorf("%w: %d MiB free, %d MiB kept in reserve", ErrDiskLow, free>>20, g.opts.Reserve>>20)
		}
	}
	return nil
}

// CheckCommand is Check for a new command: its output goes to the state
// directory, its TMPDIR to the scratch directory, and unless it is
// readOnly it writes root and its tool home.
func (g *Guard) CheckCommand(ctx context.Context, root string, writesRoot bool) error {
	tools := g.opts.ToolsBase
	if !writesRoot {
		root, tools = "", ""
	}
	return g.Check(ctx, g.opts.StateDir, g.opts.ScratchBase, root, tools)
}

// CheckPatch is Check for a patch (or an undo) of root: its files, and
// its journal and snapshots in the state directory.
func (g *Guard) CheckPatch(ctx context.Context, root string) error {
	return g.Check(ctx, g.opts.StateDir, root)
}

// FS is a watched filesystem's state (doctor, diagnostic, /readyz).
type FS struct {
	Role  string // state, scratch, tools, project
	Label string // the Project's path for a project ("" otherwise); callers decide what to show
	Free  int64
	Total int64
	// Low: below the reserve (commands writing there are stopped);
	// Refusing: below a quarter of it (new commands and patches refused).
	Low, Refusing bool
}

// Status reports each watched filesystem once (the first role that names
// it), asking the kernel now.
func (g *Guard) Status() []FS {
	var out []FS
	seen := map[uint64]bool{}
	for _, w := range g.watched(nil) {
		var st syscall.Statfs_t
		if syscall.Statfs(w.path, &st) != nil || seen[w.dev] {
			continue
		}
		seen[w.dev] = true
		free, total := int64(st.Bavail)*st.Bsize, int64(st.Blocks)*st.Bsize
		out = append(out, FS{Role: w.role, Label: w.label, Free: free, Total: total, Low: free < g.opts.Reserve, Refusing: free < g.opts.Reserve/4})
	}
	return out
}

// Stopped reports how many executions the guard stopped, by reason.
func (g *Guard) Stopped() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.stopped))
	for k, v := range g.stopped {
		out[k] = v
	}
	return out
}

// Reserve is the configured reserve.
func (g *Guard) Reserve() int64 { return g.opts.Reserve }

// Run enforces the reserve and the quota until ctx is done. While
// commands run it polls every Options.Tick, four times as often while a
// watched filesystem has less than twice the reserve free; otherwise
// about once a second.
func (g *Guard) Run(ctx context.Context) {
	t := time.NewTimer(g.opts.Tick)
	defer t.Stop()
	if g.opts.ToolsBase != "" && g.opts.ToolsMax > 0 {
		// Apart, so that walking a large tool home never delays the
		// reserve's polls.
		go g.runTools(ctx)
	}
	var lastScan time.Time
	scanFree := int64(-1)
	idle := 0
	next := g.opts.Tick
	for {
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.wake:
			// A Check found a filesystem low: look now, and from here as
			// often as close to the reserve.
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		next = g.opts.Tick
		cmds := g.opts.Commands.Commands()
		if len(cmds) == 0 {
			if started := g.opts.Commands.StartedGroups(); len(started)+len(g.running)+len(g.ended) > 0 {
				g.enforceQuota(nil, started) // the last commands' scratch, once more
			}
			// Nothing writes: report free space about once a second.
			if idle++; idle%50 == 1 {
				g.restoreReserve(g.report(nil))
			}
			continue
		}
		idle = 0
		ws := g.report(cmds)
		if near := lowest(ws, 2*g.opts.Reserve); near != nil {
			// Close to the reserve: poll faster, and count from here what
			// each command writes, so that the one to stop is known the
			// moment the reserve is crossed.
			next = g.opts.Tick / 4
			if b := g.base; b == nil || b.dev != near.dev || near.free > b.free {
				g.base = g.baselineOf(*near, ws)
			}
		} else {
			g.base = nil
		}
		if low := lowest(ws, g.opts.Reserve); low != nil && g.stopHeaviest(*low, ws) {
			// Let the stopped writer's end (and its emptied scratch)
			// show before judging again.
			next = g.opts.Tick
		}
		scratchFree := int64(-1)
		for _, w := range ws {
			if w.role == "scratch" {
				scratchFree = w.free
			}
		}
		if time.Since(lastScan) >= g.opts.ScanEvery || scanFree >= 0 && scanFree-scratchFree >= scanOnDrop {
			g.restoreReserve(ws)
			g.enforceQuota(cmds, g.opts.Commands.StartedGroups())
			lastScan, scanFree = time.Now(), scratchFree
		}
	}
}

// restoreReserve re-creates the store's reserve when the state
// filesystem has the guard's reserve free.
func (g *Guard) restoreReserve(ws []watch) {
	if g.opts.RestoreReserve == nil {
		return
	}
	for _, w := range ws {
		if w.role == "state" && w.free >= g.opts.Reserve {
			g.opts.RestoreReserve()
		}
	}
}

// watch is one watched path with its filesystem.
type watch struct {
	role, label, path string
	dev               uint64
	free              int64
}

// watched lists the state directory, the scratch base, every Project and
// the roots of cmds, with their devices (a path that cannot be read is
// left out).
func (g *Guard) watched(cmds []process.Running) []watch {
	var out []watch
	add := func(role, label, path string) {
		var st syscall.Stat_t
		if path == "" || syscall.Stat(path, &st) != nil {
			return
		}
		out = append(out, watch{role: role, label: label, path: path, dev: uint64(st.Dev)})
	}
	add("state", "", g.opts.StateDir)
	add("scratch", "", g.opts.ScratchBase)
	add("tools", "", g.opts.ToolsBase)
	roots := g.opts.Projects()
	for _, c := range cmds {
		roots = append(roots, c.Root)
	}
	seen := map[string]bool{}
	for _, r := range roots {
		if !seen[r] {
			seen[r] = true
			add("project", r, r)
		}
	}
	return out
}

// report measures the watched filesystems and hands their free space to
// the metrics.
func (g *Guard) report(cmds []process.Running) []watch {
	ws := g.watched(cmds)
	projectFree := int64(-1)
	for i := range ws {
		free, ok := freeBytes(ws[i].path)
		if !ok {
			free = -1
		}
		ws[i].free = free
		if g.opts.Metrics == nil || free < 0 {
			continue
		}
		if ws[i].role == "project" {
			if projectFree < 0 || free < projectFree {
				projectFree = free
			}
		} else {
			g.opts.Metrics.DiskFree(ws[i].role, free)
		}
	}
	if g.opts.Metrics != nil && projectFree >= 0 {
		g.opts.Metrics.DiskFree("project", projectFree)
	}
	return ws
}

// lowest returns the watched filesystem with the least free space below
// reserve, nil when none is.
func lowest(ws []watch, reserve int64) *watch {
	var low *watch
	for i := range ws {
		if w := &ws[i]; w.free >= 0 && w.free < reserve && (low == nil || w.free < low.free) {
			low = w
		}
	}
	return low
}

// stopWhenDropping is how much free space a low filesystem must lose,
// since the guard started watching it, before a writer is stopped: writes
// that use no space (or a filesystem someone else frees) stop nothing.
const stopWhenDropping = 4 << 20

// baseline is what the guard saw when it started watching a low
// filesystem: its free space and each command's write count. Only Run's
// goroutine touches it.
type baseline struct {
	dev    uint64
	free   int64
	counts map[string]int64
}

// writes is what each command there wrote to low's filesystem: what its
// processes wrote (when they write there: a writable root there, or its
// scratch there), its output (when the state is there).
type writes struct {
	counts       map[string]int64  // by command
	groupOf      map[string]string // command -> group
	hidden       []string          // groups with a command whose counts cannot be read
	scratchThere bool
}

func (g *Guard) writesTo(low watch, ws []watch) writes {
	on := func(path string) bool {
		for _, w := range ws {
			if w.path == path {
				return w.dev == low.dev
			}
		}
		var st syscall.Stat_t
		return syscall.Stat(path, &st) == nil && uint64(st.Dev) == low.dev
	}
	stateThere := on(g.opts.StateDir)
	toolsThere := g.opts.ToolsBase != "" && on(g.opts.ToolsBase)
	out := writes{counts: map[string]int64{}, groupOf: map[string]string{}, scratchThere: on(g.opts.ScratchBase)}
	for _, c := range g.opts.Commands.Commands() {
		rootThere := c.WritesRoot && on(c.Root) || c.Tools != "" && toolsThere
		if !rootThere && !out.scratchThere && !stateThere {
			continue
		}
		var n int64
		if rootThere || out.scratchThere {
			n += c.Written
		}
		if stateThere {
			n += c.OutputBytes
		}
		out.counts[c.ID], out.groupOf[c.ID] = n, c.Group
		if c.Hidden && !slices.Contains(out.hidden, c.Group) {
			out.hidden = append(out.hidden, c.Group)
		}
	}
	return out
}

func (g *Guard) baselineOf(w watch, ws []watch) *baseline {
	return &baseline{dev: w.dev, free: w.free, counts: g.writesTo(w, ws).counts}
}

// stopHeaviest stops the execution that wrote the most to low's
// filesystem since the baseline, once that filesystem has lost
// stopWhenDropping since then. Its scratch directory is emptied when it
// lies there. A command whose counts cannot be read is stopped when the
// space drops and no readable command wrote. It reports whether it
// stopped anything.
func (g *Guard) stopHeaviest(low watch, ws []watch) bool {
	b := g.base
	if b == nil || b.dev != low.dev || low.free > b.free {
		// Start watching (again: another filesystem, or space came back).
		g.base = g.baselineOf(low, ws)
		return false
	}
	if b.free-low.free < stopWhenDropping {
		return false
	}
	now := g.writesTo(low, ws)
	grew := map[string]int64{}
	for id, n := range now.counts {
		if d := n - b.counts[id]; d > 0 {
			grew[now.groupOf[id]] += d
		}
	}
	stop := now.hidden
	if len(grew) > 0 {
		heaviest := ""
		for gr, d := range grew {
			if heaviest == "" || d > grew[heaviest] {
				heaviest = gr
			}
		}
		stop = []string{heaviest}
	}
	for _, gr := range stop {
		n := g.opts.Commands.StopGroup(gr, process.ReasonDiskLow, now.scratchThere)
		g.count(process.ReasonDiskLow)
		g.log.Warn("free space below the reserve and falling: stopped the heaviest writer", "role", low.role, "free_mib", low.free>>20,
			"reserve_mib", g.opts.Reserve>>20, "written_since", grew[gr], "counts_hidden", len(grew) == 0, "trees", n, "scratch_emptied", now.scratchThere)
	}
	if len(stop) == 0 {
		g.log.Warn("free space below the reserve and falling, and no command writes there", "role", low.role, "free_mib", low.free>>20)
	}
	g.base = nil
	return len(stop) > 0
}

// enforceQuota measures the scratch directory of each execution with a
// live command, of each whose command started since the previous scan
// (started: a command quicker than a scan), and once more of each whose
// last command ended since the previous scan. It stops (and empties) an
// execution past the quota, then, for each grant whose executions'
// scratch directories together are past it, the grant's largest: one
// grant's executions share one quota, so opening more of them takes no
// more of the scratch filesystem.
func (g *Guard) enforceQuota(cmds []process.Running, started map[string]process.GroupScratch) {
	scan := maps.Clone(started)
	if scan == nil {
		scan = map[string]process.GroupScratch{}
	}
	maps.Copy(scan, g.ended)
	live := map[string]process.GroupScratch{}
	for _, c := range cmds {
		if c.Scratch != "" {
			gs := process.GroupScratch{Dir: c.Scratch, Tenant: c.Tenant}
			live[c.Group], scan[c.Group] = gs, gs
		}
	}
	// Groups running at this scan and not at the next get one scan more.
	g.ended = map[string]process.GroupScratch{}
	for gr, gs := range g.running {
		if _, ok := live[gr]; !ok {
			g.ended[gr] = gs
		}
	}
	g.running = live
	if g.sizes == nil {
		g.sizes = map[string]sized{}
	}
	for gr, gs := range scan {
		size, over := usage(gs.Dir, g.opts.ScratchMax, g.opts.MaxEntries)
		g.sizes[gr] = sized{GroupScratch: gs, size: size}
		if over {
			g.stopScratch(gr, "scratch directory past its quota: stopped and emptied", size)
		}
	}
	// A grant's executions together. Executions without a command keep
	// their last measure (nothing writes there); a closed one's directory
	// is gone.
	byTenant := map[string]int64{}
	for gr, s := range g.sizes {
		if _, err := os.Stat(s.Dir); err != nil {
			delete(g.sizes, gr)
			continue
		}
		byTenant[s.Tenant] += s.size
	}
	for tenant, total := range byTenant {
		for total > g.opts.ScratchMax {
			heaviest := ""
			for gr, s := range g.sizes {
				if s.Tenant == tenant && (heaviest == "" || s.size > g.sizes[heaviest].size) {
					heaviest = gr
				}
			}
			total -= g.sizes[heaviest].size
			g.stopScratch(heaviest, "a grant's scratch directories together past the quota: stopped and emptied its largest", total)
		}
	}
	var largest int64
	for _, s := range g.sizes {
		largest = max(largest, s.size)
	}
	g.mu.Lock()
	g.largest = largest
	g.mu.Unlock()
	if g.opts.Metrics != nil {
		g.opts.Metrics.ScratchLargest(largest)
	}
}

// sized is a scratch directory at its last measure.
type sized struct {
	process.GroupScratch
	size int64
}

// stopScratch stops group's commands and empties its scratch directory.
func (g *Guard) stopScratch(group, msg string, bytes int64) {
	n := g.opts.Commands.StopGroup(group, process.ReasonScratchQuota, true)
	if s, ok := g.sizes[group]; ok {
		s.size = 0
		g.sizes[group] = s
	}
	g.count(process.ReasonScratchQuota)
	g.log.Warn(msg, "bytes", bytes, "quota", g.opts.ScratchMax, "trees", n)
}

func (g *Guard) count(reason string) {
	g.mu.Lock()
	g.stopped[reason]++
	g.mu.Unlock()
}

// Size is the allocated size of dir's tree, each inode once, symlinks
// not followed (0 when dir is absent): `devspace projects list` shows a
// tool home's with it.
func Size(dir string) int64 {
	size, _ := usage(dir, math.MaxInt64, math.MaxInt)
	return size
}

// usage sums the allocated size of dir's tree (each inode once). over is
// true once the sum passes limit or the tree has more than maxEntries
// entries; the walk stops there.
func usage(dir string, limit int64, maxEntries int) (size int64, over bool) {
	type inode struct{ dev, ino uint64 }
	linked := map[inode]bool{}
	entries := 0
	stop := errors.New("over")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: skip
		}
		if entries++; entries > maxEntries {
			return stop
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			k := inode{uint64(st.Dev), st.Ino}
			if linked[k] {
				return nil
			}
			linked[k] = true
		}
		if size += st.Blocks * 512; size > limit {
			return stop
		}
		return nil
	})
	return size, errors.Is(err, stop)
}

// freeBytes is the space an unprivileged writer may still use on path's
// filesystem.
func freeBytes(path string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
