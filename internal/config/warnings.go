package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Warnings returns advice for `devspace doctor` about a configuration that
// is valid but risky or probably unintended. It is never fatal, returns nil
// when there is nothing to say, and reads the filesystem (project contents,
// container markers) without changing it. Each message starts with the
// variable it concerns.
func (c *Config) Warnings() []string {
	return c.warnings(inContainer())
}

// inContainer reports whether DevSpace runs in a container: Docker writes
// /.dockerenv, Podman /run/.containerenv, and Kubernetes (whose runtimes
// write neither) sets KUBERNETES_SERVICE_HOST in every pod.
func inContainer() bool {
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return os.Getenv("KUBERNETES_SERVICE_HOST") != ""
}

func (c *Config) warnings(container bool) []string {
	var ws []string
	warn := func(format string, args ...any) { ws = append(ws, fmt.Sprintf(format, args...)) }

	if len(c.Projects) == 0 {
		warn("%s: no project is approved, so a client can see nothing; add one, for example %s=app=/path/to/app", envProjects, envProjects)
	}
	roots, _ := checkProjects(c.Projects)
	for _, p := range roots {
		if drive := cloudDrive(p.real); drive != "" {
			warn("%s: %s is in a cloud-drive folder (%s); sync can rewrite files while commands run and upload build output, so consider approving a local clone instead", envProjects, p, drive)
		}
		if depth(p.real) <= 1 {
			warn("%s: %s is a top-level directory, which gives a grant far more than one project; approve the project directories inside it instead", envProjects, p)
		} else if repos := gitChildren(p.real); len(repos) >= 2 {
			names := repos
			if len(names) > 3 {
				names = append(names[:3:3], "…")
			}
			warn("%s: %s is not a Git repository but holds %d of them (%s); it looks like a parent of unrelated work, so approve each repository as its own project", envProjects, p, len(repos), strings.Join(names, ", "))
		}
	}
	if c.ScopeEnabled(ScopeProcessExecute) && !container {
		warn("%s: process:execute is enabled outside a container, so commands run with your user's full rights on this machine; run DevSpace in its container image or remove process:execute", envOAuthScopes)
	}
	if !container && c.MetricsListen != "" && !c.MetricsIsLoopback() {
		warn("%s: %q is not loopback; make sure the metrics port is firewalled and never tunnelled", envMetricsListen, c.MetricsListen)
	}
	if !container && c.AdminListen != "" && !c.AdminIsLoopback() {
		warn("%s: %q is not loopback; the Owner's console answers only requests addressed to a loopback name or this host, but keep its port firewalled and never tunnel it", envAdminListen, c.AdminListen)
	}
	if c.CommandSandboxOff && c.ScopeEnabled(ScopeProcessExecute) {
		warn("%s: off runs every command with the server's own rights: a command can read the state directory (auth.json, the database), every Project and other commands' environments; remove it to confine commands with Landlock", envCommandSandbox)
	}
	if c.LogShellCommands {
		warn("%s: command previews go to the logs and may contain secrets typed into commands; set it to 0 once you are done debugging", envLogShellCommands)
	}
	for _, s := range c.SkillPaths {
		if r, ok := insideProject(s, roots); ok {
			warn("%s: %q is inside %s, where the model can write, so it could change instructions you trust; keep trusted skills outside every approved root", envSkillPaths, s, r)
		}
	}
	return ws
}

// cloudDrive returns the path component that marks a sync-client folder, or
// "" when there is none. Sync clients name their folders with these prefixes
// ("Dropbox (Personal)", "OneDrive - Contoso", "GoogleDrive-…" under
// CloudStorage), so a component matches by prefix, ignoring case.
func cloudDrive(path string) string {
	for _, comp := range strings.Split(path, string(filepath.Separator)) {
		lc := strings.ToLower(comp)
		for _, name := range []string{"dropbox", "google drive", "googledrive", "onedrive", "icloud drive", "iclouddrive", "mobile documents", "cloudstorage"} {
			if strings.HasPrefix(lc, name) {
				return comp
			}
		}
	}
	return ""
}

// depth returns the number of components of a clean absolute path: 0 for
// /, 1 for /srv.
func depth(path string) int {
	path = strings.Trim(path, string(filepath.Separator))
	if path == "" {
		return 0
	}
	return strings.Count(path, string(filepath.Separator)) + 1
}

// gitChildren returns the names of dir's immediate subdirectories that hold
// .git, or nil when dir is itself a repository (a .git directory or file)
// or cannot be read.
func gitChildren(dir string) []string {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var repos []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, e.Name(), ".git")); err == nil {
			repos = append(repos, e.Name())
		}
	}
	return repos
}
