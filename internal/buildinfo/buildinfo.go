// Package buildinfo reports the binary's version, set at link time with
// -ldflags "-X github.com/devspace-dev/devspace/internal/buildinfo.version=…".
package buildinfo

import "runtime/debug"

// Set by the linker; read-only at run time.
var (
	version = "dev"
	commit  = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Get returns the build information, falling back to the module's VCS data.
func Get() Info {
	info := Info{Version: version, Commit: commit}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		if info.Commit == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					info.Commit = s.Value
				}
			}
		}
	}
	return info
}
