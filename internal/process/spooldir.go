package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The Manager's output spool: the files in Options.SpoolDir and the
// budget they are counted against (budget.go).

// spoolPath is where spool id's output file lives.
func (m *Manager) spoolPath(id string) string { return filepath.Join(m.opts.SpoolDir, id+spoolExt) }

const spoolExt = ".out"

// SpoolFile is an output file found in the spool directory.
type SpoolFile struct {
	ID   string
	Size int64
}

// SpoolFiles lists the output files in the spool directory (those a
// previous run left included), for reconciliation at start.
func (m *Manager) SpoolFiles() ([]SpoolFile, error) {
	entries, err := os.ReadDir(m.opts.SpoolDir)
	if err != nil {
		return nil, fmt.Errorf("list output spool: %w", err)
	}
	var out []SpoolFile
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), spoolExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, SpoolFile{ID: id, Size: fi.Size()})
	}
	return out, nil
}

// AdoptOutput counts an output file a previous run left (size bytes)
// against the total spool budget and owner's share.
func (m *Manager) AdoptOutput(id, owner string, size int64) { m.budget.adopt(id, owner, size) }

// RemoveOutput deletes spool id's file and gives its bytes back to the
// budget. Use it for output no Process in memory owns any more (Remove
// covers the others); a second call, or one for an ID Remove already
// handled, is harmless.
func (m *Manager) RemoveOutput(id string) error {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return fmt.Errorf("invalid spool id %q", id)
	}
	m.budget.forget(id)
	if err := os.Remove(m.spoolPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// RetainedBytes is how many output bytes all spool files hold
// (output_bytes_retained).
func (m *Manager) RetainedBytes() int64 { return m.budget.usedBytes() }

// MaxRetainedBytes is the total spool budget (Options.MaxSpoolBytes).
func (m *Manager) MaxRetainedBytes() int64 { return m.opts.MaxSpoolBytes }

// OwnerRetainedBytes returns how many output bytes the spool files of
// each owner (Spec.Tenant) hold, running commands' included; owners
// without output are absent. The map is the caller's.
func (m *Manager) OwnerRetainedBytes() map[string]int64 { return m.budget.ownerBytes() }

// MaxOwnerRetainedBytes is one owner's share of the spool
// (Options.SpoolShareBytes).
func (m *Manager) MaxOwnerRetainedBytes() int64 { return m.opts.SpoolShareBytes }

// SpoolPressure is signalled (one pending signal at most) when a
// command's output could not be kept whole for its owner's share or the
// total budget, when its head was kept past one of them, or when it takes
// either above 90% of its bound: whoever keeps finished output (the
// retention) should retire some of it.
func (m *Manager) SpoolPressure() <-chan struct{} { return m.budget.pressure }
