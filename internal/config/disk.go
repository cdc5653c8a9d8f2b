package config

import (
	"fmt"
	"path/filepath"
)

// Environment variables of disk use.
const (
	envScratchDir  = "DEVSPACE_SCRATCH_DIR"
	envScratchMax  = "DEVSPACE_SCRATCH_MAX"
	envDiskReserve = "DEVSPACE_DISK_RESERVE"
	envToolsDir    = "DEVSPACE_TOOLS_DIR"
	envToolsMax    = "DEVSPACE_TOOLS_MAX"
)

// Defaults of disk use. docs/decisions.md explains each.
const (
	// DefaultScratchMax bounds one grant's scratch directories together (each execution's, its
	// commands' TMPDIR).
	DefaultScratchMax int64 = 1 << 30
	// DefaultDiskReserve is the free space DevSpace keeps on the
	// filesystems of the state, the scratch directories and the Projects.
	DefaultDiskReserve int64 = 256 << 20
	// DefaultToolsMax bounds one Project's tool home: room for a Node,
	// Go or Rust toolchain with its caches, not for a second disk.
	DefaultToolsMax int64 = 4 << 30

	minScratchMax  int64 = 16 << 20
	minDiskReserve int64 = 16 << 20
	minToolsMax    int64 = 16 << 20
	maxDiskReserve int64 = 64 << 30
)

func diskSettings() []setting {
	return []setting{
		{
			flag: "scratch-dir", env: envScratchDir, arg: "DIR",
			def:   "$XDG_CACHE_HOME/devspace/scratch, else $HOME/.cache/devspace/scratch; /scratch in the image",
			usage: "Directory holding each execution's private scratch directory (its commands' TMPDIR, and a readOnly command's HOME; removed when the execution closes). Keep it off the state directory's filesystem where you can, and outside every project.",
			parse: func(c *Config, v string) error {
				p, err := filepath.Abs(v)
				if err != nil {
					return fmt.Errorf("cannot make %q absolute: %v", v, err)
				}
				c.ScratchDir = p
				return nil
			},
		},
		{
			flag: "scratch-max", env: envScratchMax, arg: "BYTES",
			def:   "1GiB",
			usage: "Most one grant's scratch directories (one per execution) may hold together, in bytes or with a KiB/MiB/GiB suffix (at least 16MiB). Past it the commands of the grant's largest execution are stopped and that scratch directory emptied (killReason scratch_quota).",
			parse: sizeField(func(c *Config) *int64 { return &c.ScratchMax }),
		},
		{
			flag: "disk-reserve", env: envDiskReserve, arg: "BYTES",
			def:   "256MiB",
			usage: "Free space kept on the filesystems of the state directory, the scratch directory and each project (16MiB to 64GiB). Below it, the commands writing there are stopped, heaviest writer first; below a quarter of it, new commands and patches there are refused (disk_low).",
			parse: sizeField(func(c *Config) *int64 { return &c.DiskReserve }),
		},
		{
			flag: "tools-dir", env: envToolsDir, arg: "DIR",
			def:   "$XDG_CACHE_HOME/devspace/tools, else $HOME/.cache/devspace/tools; /tools in the image",
			usage: "Directory holding each Project's persistent tool home: its commands' HOME (workspaceWrite), caches and installed tools (GOPATH, CARGO_HOME, npm prefix, ~/.local, ~/bin), kept across executions and restarts. Keep it outside every project and apart from the scratch directory.",
			parse: func(c *Config, v string) error {
				p, err := filepath.Abs(v)
				if err != nil {
					return fmt.Errorf("cannot make %q absolute: %v", v, err)
				}
				c.ToolsDir = p
				return nil
			},
		},
		{
			flag: "tools-max", env: envToolsMax, arg: "BYTES",
			def:   "4GiB",
			usage: "Most one Project's tool home may hold, in bytes or with a KiB/MiB/GiB suffix (at least 16MiB). A command that makes it grow past this is stopped (killReason tools_quota); the files stay until the Owner runs `devspace projects clear-tools LABEL` or a command deletes them.",
			parse: sizeField(func(c *Config) *int64 { return &c.ToolsMax }),
		},
	}
}

// defaultScratchDir is the scratch directory when DEVSPACE_SCRATCH_DIR is
// unset: the user's cache directory, on disk and the user's own.
func defaultScratchDir(lookupEnv func(string) (string, bool)) string {
	if x, _ := lookupEnv("XDG_CACHE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "devspace", "scratch")
	}
	if h, _ := lookupEnv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "devspace", "scratch")
	}
	return ""
}

// defaultToolsDir is the tool directory when DEVSPACE_TOOLS_DIR is unset:
// beside the default scratch directory, in the user's cache directory.
func defaultToolsDir(lookupEnv func(string) (string, bool)) string {
	if d := defaultScratchDir(lookupEnv); d != "" {
		return filepath.Join(filepath.Dir(d), "tools")
	}
	return ""
}

func (c *Config) validateDisk(roots []resolvedProject) []error {
	var errs []error
	switch {
	case c.ScratchDir == "":
		errs = append(errs, errorf(envScratchDir, "is not set and neither XDG_CACHE_HOME nor HOME is set to derive it; set it to a directory for the commands' scratch space"))
	case !filepath.IsAbs(c.ScratchDir):
		errs = append(errs, errorf(envScratchDir, "%q is not an absolute path", c.ScratchDir))
	default:
		if r, ok := insideProject(c.ScratchDir, roots); ok {
			errs = append(errs, errorf(envScratchDir, "%q is inside %s, where every grant of that project would see other executions' scratch; keep it outside every approved root", c.ScratchDir, r))
		}
		for _, r := range roots {
			if within(r.real, realPath(c.ScratchDir)) {
				errs = append(errs, errorf(envScratchDir, "%q contains %s; keep the scratch directory and the projects apart", c.ScratchDir, r))
			}
		}
		if c.StateDir != "" && within(realPath(c.StateDir), realPath(c.ScratchDir)) {
			errs = append(errs, errorf(envScratchDir, "%q contains the state directory, which commands would then reach", c.ScratchDir))
		}
	}
	errs = append(errs, c.validateTools(roots)...)
	if c.ScratchMax < minScratchMax {
		errs = append(errs, errorf(envScratchMax, "%d bytes is too small; use at least 16MiB", c.ScratchMax))
	}
	if c.DiskReserve < minDiskReserve || c.DiskReserve > maxDiskReserve {
		errs = append(errs, errorf(envDiskReserve, "%d bytes is out of range; use 16MiB to 64GiB", c.DiskReserve))
	}
	return errs
}

// validateTools checks DEVSPACE_TOOLS_DIR and DEVSPACE_TOOLS_MAX: a tool
// home is writable by its Project's commands, so the directory holding
// them must not hold or lie in a Project, the state or the scratch
// directories (whose removal and quota are another rule's).
func (c *Config) validateTools(roots []resolvedProject) []error {
	var errs []error
	switch {
	case c.ToolsDir == "":
		errs = append(errs, errorf(envToolsDir, "is not set and neither XDG_CACHE_HOME nor HOME is set to derive it; set it to a directory for the Projects' tool homes"))
	case !filepath.IsAbs(c.ToolsDir):
		errs = append(errs, errorf(envToolsDir, "%q is not an absolute path", c.ToolsDir))
	default:
		real := realPath(c.ToolsDir)
		if r, ok := insideProject(c.ToolsDir, roots); ok {
			errs = append(errs, errorf(envToolsDir, "%q is inside %s; keep the tool homes outside every approved root", c.ToolsDir, r))
		}
		for _, r := range roots {
			if within(r.real, real) {
				errs = append(errs, errorf(envToolsDir, "%q contains %s; keep the tool homes and the projects apart", c.ToolsDir, r))
			}
		}
		if c.StateDir != "" && within(realPath(c.StateDir), real) {
			errs = append(errs, errorf(envToolsDir, "%q contains the state directory, which commands would then reach", c.ToolsDir))
		}
		if c.ScratchDir != "" && (within(real, realPath(c.ScratchDir)) || within(realPath(c.ScratchDir), real)) {
			errs = append(errs, errorf(envToolsDir, "%q overlaps DEVSPACE_SCRATCH_DIR %q; keep the tool homes and the scratch directories apart", c.ToolsDir, c.ScratchDir))
		}
	}
	if c.ToolsMax < minToolsMax {
		errs = append(errs, errorf(envToolsMax, "%d bytes is too small; use at least 16MiB", c.ToolsMax))
	}
	return errs
}
