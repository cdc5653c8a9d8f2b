package diskguard

import (
	"context"
	"maps"
	"math"
	"time"

	"github.com/devspace-dev/devspace/internal/process"
)

// runTools holds the tool homes to Options.ToolsMax until ctx is done:
// every Options.ToolsScanEvery, while a command may write one or since one
// did, it measures them (enforceTools).
func (g *Guard) runTools(ctx context.Context) {
	t := time.NewTicker(g.opts.ToolsScanEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cmds := g.opts.Commands.Commands()
		started := g.opts.Commands.StartedTools()
		if len(cmds)+len(started)+len(g.toolsRunning) > 0 {
			g.enforceTools(cmds, started)
		}
	}
}

// enforceTools measures the tool home of each live command that may write
// one, of each such command started since the previous measure (started)
// and, once more, of each written at the previous measure and not now. A
// tool home past Options.ToolsMax that grew since its previous measure
// (or has none since the guard began: after a restart, the first command
// writing a tool home over its quota) has every command that may write it
// stopped
// (tools_quota); its files stay, for the Owner (`devspace projects
// clear-tools`) or a command to delete. A tool home over the quota that
// does not grow stops nothing: a command deleting from it, or running
// only what is installed there, goes on. The measure after a stop only
// measures (the stopped commands' last writes land after it): a tool home
// may pass its quota by what is written in one Options.ToolsScanEvery
// after a stop, once.
func (g *Guard) enforceTools(cmds []process.Running, started []string) {
	if g.opts.ToolsMax <= 0 {
		return
	}
	live := map[string]bool{}
	for _, c := range cmds {
		if c.Tools != "" {
			live[c.Tools] = true
		}
	}
	scan := maps.Clone(live)
	for _, d := range started {
		scan[d] = true
	}
	for d := range g.toolsRunning {
		scan[d] = true
	}
	g.toolsRunning = live
	if g.toolSizes == nil {
		g.toolSizes, g.toolsStopped = map[string]int64{}, map[string]bool{}
	}
	for dir := range scan {
		size, tooMany := usage(dir, math.MaxInt64, g.opts.ToolsMaxEntries)
		prev, seen := g.toolSizes[dir]
		g.toolSizes[dir] = size
		if g.toolsStopped[dir] {
			// The commands stopped at the previous measure wrote on until
			// their kill landed: that growth is theirs, not the next
			// command's. Measure again from here.
			delete(g.toolsStopped, dir)
			continue
		}
		if (size <= g.opts.ToolsMax && !tooMany) || (seen && size <= prev && !tooMany) {
			continue
		}
		g.toolsStopped[dir] = true
		n := g.opts.Commands.StopTools(dir, process.ReasonToolsQuota)
		g.count(process.ReasonToolsQuota)
		g.log.Warn("a Project's tool home grew past its quota: stopped the commands writing it; its files stay until the Owner clears them (devspace projects clear-tools)",
			"bytes", size, "quota", g.opts.ToolsMax, "too_many_entries", tooMany, "trees", n)
	}
}
