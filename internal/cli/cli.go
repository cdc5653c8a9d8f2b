// Package cli is the Owner's command line: argument parsing, help text,
// every subcommand (serve, init, owner, grants, projects, doctor,
// diagnostic, healthcheck, version) and their output and exit codes. The
// server, and the state an owner command acts on when no server answers,
// are built by internal/app (New, OpenState); init creates the state
// files, and doctor and diagnostic read them read-only, directly.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/buildinfo"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/store"
)

// Env is the process environment the CLI reads (os.LookupEnv in main).
type Env func(string) (string, bool)

// IO bundles the CLI's streams.
type IO struct {
	Stdout, Stderr io.Writer
}

const usageText = `DevSpace — a self-hosted bridge between ChatGPT (or any MCP client) and your own code.

Usage:
  devspace [serve] [flags]          run the server (default)
  devspace init [--force] [flags]   create state and print the Owner password once
  devspace owner rotate-password    set a new Owner password (ends every grant)
  devspace grants list [--all] [--json]
  devspace grants revoke GRANT_ID
  devspace grants revoke-all        end every grant (emergency)
  devspace projects list [--json]   configured Projects, with their tool homes' sizes
  devspace projects clear-tools LABEL
                                    empty a Project's tool home (its commands'
                                    installed tools and caches), stopping the
                                    commands that could write it
  devspace projects clear-tools --orphans
                                    remove the tool homes no configured Project
                                    has (removed Projects, replaced roots);
                                    the running server's Projects count
  devspace admin                    print a one-time sign-in link to the Owner's
                                    console (the running server's; 2 minutes)
  devspace doctor                   check configuration and state (reads only)
  devspace diagnostic [--output FILE]
                                    a redacted support bundle (JSON): versions,
                                    configuration, doctor, counts, recent audit
  devspace healthcheck              exit 0 when /healthz answers (for Docker)
  devspace version

Every command reads the same configuration (environment variables, or the
flags below placed after the command name).

`

// Main runs the CLI and returns the process exit code.
func Main(ctx context.Context, args []string, env Env, stdio IO) int {
	cmd, rest := "serve", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, rest, env, stdio)
	case "init":
		err = runInit(ctx, rest, env, stdio)
	case "owner":
		if len(rest) == 0 || rest[0] != "rotate-password" {
			err = usageError("usage: devspace owner rotate-password [flags]")
			break
		}
		err = runRotate(ctx, rest[1:], env, stdio)
	case "grants":
		err = runGrants(ctx, rest, env, stdio)
	case "projects":
		switch {
		case len(rest) > 0 && rest[0] == "list":
			err = runProjects(ctx, rest[1:], env, stdio)
		case len(rest) > 0 && rest[0] == "clear-tools":
			err = runClearTools(ctx, rest[1:], env, stdio)
		default:
			err = usageError("usage: devspace projects list [--json] [flags] | devspace projects clear-tools LABEL|--orphans [flags]")
		}
	case "admin":
		err = runAdmin(ctx, rest, env, stdio)
	case "doctor":
		err = runDoctor(ctx, rest, env, stdio)
	case "diagnostic":
		err = runDiagnostic(ctx, rest, env, stdio)
	case "healthcheck":
		err = runHealthcheck(ctx, rest, env, stdio)
	case "version":
		bi := buildinfo.Get()
		fmt.Fprintf(stdio.Stdout, "devspace %s %s %s\n", bi.Version, bi.Commit, bi.GoVersion)
	case "help", "-h", "--help":
		printUsage(stdio.Stdout)
	default:
		err = usageError(fmt.Sprintf("unknown command %q; run `devspace help`", cmd))
	}
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdio.Stdout)
		return 0
	}
	fmt.Fprintln(stdio.Stderr, "devspace:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

type usageError string

func (e usageError) Error() string { return string(e) }

func printUsage(w io.Writer) {
	fmt.Fprint(w, usageText)
	config.Usage(w)
}

// splitFlags separates command-specific flags (named in own) from the
// configuration flags.
func splitFlags(args []string, own map[string]bool) (mine, cfg []string) {
	for _, a := range args {
		name := strings.TrimLeft(a, "-")
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		if strings.HasPrefix(a, "-") && own[name] {
			mine = append(mine, a)
			continue
		}
		cfg = append(cfg, a)
	}
	return mine, cfg
}

func loadConfig(args []string, env Env) (*config.Config, error) {
	cfg, err := config.Load(args, env)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

func runServe(ctx context.Context, args []string, env Env, stdio IO) error {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return err
	}
	log := app.NewLogger(cfg, stdio.Stderr)
	if err := app.ResolvePublicURL(ctx, cfg, log); err != nil {
		return err
	}
	resumeGC := pauseGC()
	a, err := app.New(ctx, cfg, log, app.Options{})
	if err != nil {
		resumeGC()
		return err
	}
	log.Info("devspace starting", "version", buildinfo.Get().Version, "projects", len(cfg.Projects),
		"public_base_url", cfg.PublicBaseURL)
	if err = a.Start(); err != nil {
		resumeGC()
		_ = a.Close()
		return err
	}
	resume := time.AfterFunc(app.Settle, resumeGC)
	<-ctx.Done()
	if resume.Stop() {
		resumeGC() // stopped before settle: resume now, not after we return
	}
	log.Info("shutting down")
	return a.Shutdown(context.Background())
}

// startHeapLimit bounds the heap while the server starts with the
// collector paused (pauseGC). A start allocates ~7 MB here.
const startHeapLimit = 64 << 20

// pauseGC turns the garbage collector off until the returned function
// is called, unless the heap reaches startHeapLimit (or a lower
// GOMEMLIMIT) first. The start allocates a few MB in bursts against a
// 4 MB initial goal: two or three collections, each taking one of the
// two cores for several ms and stopping the world, while everything on
// the way to ready competes for CPU (docs/performance.md, "Start to
// ready"). Resuming restores GOGC and GOMEMLIMIT as they were. serve
// resumes a moment (app.Settle) after its listeners are bound, so that the
// collection of the start's garbage does not compete with the first
// /readyz probes either; the heap limit still holds meanwhile.
func pauseGC() (resume func()) {
	limit := debug.SetMemoryLimit(-1) // reads it
	debug.SetMemoryLimit(min(limit, startHeapLimit))
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

func runInit(ctx context.Context, args []string, env Env, stdio IO) error {
	mine, rest := splitFlags(args, map[string]bool{"force": true})
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	force := fs.Bool("force", false, "overwrite existing state (ends every grant)")
	if err := fs.Parse(mine); err != nil {
		return usageError(err.Error())
	}
	cfg, err := loadConfig(rest, env)
	if err != nil {
		return err
	}
	var password []byte
	if cfg.OwnerPasswordFile != "" {
		data, err := os.ReadFile(cfg.OwnerPasswordFile)
		if err != nil {
			return fmt.Errorf("DEVSPACE_OWNER_PASSWORD_FILE: %w", err)
		}
		password = []byte(strings.TrimRight(string(data), "\r\n"))
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, authstate.FileName)); errors.Is(err, os.ErrNotExist) &&
		control.ServesOtherState(ctx, cfg.ControlListen, nil) {
		// A server already runs with another state: its owner most likely
		// meant that one (a missing DEVSPACE_STATE_DIR), and a second state
		// could not be served on this control address anyway.
		return fmt.Errorf("a DevSpace server answers on %s with another state; set DEVSPACE_STATE_DIR (or --state-dir) "+
			"to the directory it serves (`make run` uses .data/state in its checkout) instead of creating a second state in %s. "+
			"For a separate instance, give it its own DEVSPACE_CONTROL_LISTEN", cfg.ControlListen, cfg.StateDir)
	}
	var st *store.Store
	if *force {
		// Hold the state before replacing its key: a server still using it
		// would not see the epoch bump below (it answers tokens from
		// memory), so refuse while one runs.
		if st, err = store.Open(ctx, cfg.StateDir, store.Options{}); err != nil {
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("a DevSpace server is using the state in %s; stop it before `devspace init --force`", cfg.StateDir)
			}
			return err
		}
		defer st.Close()
	}
	pw, err := authstate.Init(cfg.StateDir, authstate.InitOptions{Password: password, MasterKeyFile: cfg.MasterKeyFile, Force: *force})
	if errors.Is(err, authstate.ErrExists) {
		return fmt.Errorf("state already exists in %s; use `devspace init --force` to replace it (every grant ends)", cfg.StateDir)
	}
	if err != nil {
		return err
	}
	if st == nil {
		if st, err = store.Open(ctx, cfg.StateDir, store.Options{}); err != nil {
			return err
		}
		defer st.Close()
	}
	if *force {
		// A new master key changes every projectRef and reference: end
		// whatever the old state authorized.
		if _, _, err := st.BumpGlobalEpoch(ctx, "reinitialized"); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdio.Stdout, "DevSpace state created in %s\n", cfg.StateDir)
	if password == nil {
		fmt.Fprintf(stdio.Stdout, "Owner password (shown once; store it in your password manager):\n\n    %s\n\n", pw)
	} else {
		fmt.Fprintln(stdio.Stdout, "Owner password taken from DEVSPACE_OWNER_PASSWORD_FILE.")
	}
	return nil
}

// withAdmin runs fn against the running server's control API, or, when no
// server answers, against the state directory directly.
func withAdmin(ctx context.Context, cfg *config.Config, fn func(adm adminAPI) error) error {
	return withAdminNote(ctx, cfg, nil, fn)
}

// withAdminNote is withAdmin that tells note (when not nil) where the
// answer comes from: the running server, or the state directory read
// directly because no server answered.
func withAdminNote(ctx context.Context, cfg *config.Config, note io.Writer, fn func(adm adminAPI) error) error {
	auth, err := authstate.Load(cfg.StateDir, cfg.MasterKeyFile)
	if errors.Is(err, authstate.ErrNotInitialized) {
		return app.NotInitialized(ctx, cfg)
	}
	if err != nil {
		return err
	}
	client := control.NewClient(cfg.ControlListen, auth.Derive(control.KeyPurpose))
	err = fn(remoteAdmin{client})
	if !control.IsUnavailable(err) {
		if note != nil && err == nil {
			fmt.Fprintf(note, "(from the running server on %s; state %s)\n", cfg.ControlListen, cfg.StateDir)
		}
		return err
	}
	a, err := app.OpenState(ctx, cfg)
	if errors.Is(err, store.ErrLocked) {
		// A server owns the state but listens elsewhere; a change written
		// here would bypass it (its verification cache would not see it).
		return fmt.Errorf("a DevSpace server (or another devspace command) is using the state in %s, but no server answered on %s; "+
			"set DEVSPACE_CONTROL_LISTEN to that server's control address (in a container: run the command in the server's container)",
			cfg.StateDir, cfg.ControlListen)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	if note != nil {
		fmt.Fprintf(note, "(no server answered on %s; read the state in %s directly)\n", cfg.ControlListen, cfg.StateDir)
	}
	err = fn(a)
	if errors.Is(err, oauth.ErrNotRecorded) {
		// Nothing holds it in memory once this command exits.
		return fmt.Errorf("not everything was recorded: the disk of %s is full; free space there and run the command again", cfg.StateDir)
	}
	return err
}

// noteUnlessJSON is where a list command says where its answer comes
// from: standard error, but nowhere when the output is JSON for a program
// (which may read both streams together).
func noteUnlessJSON(stdio IO, asJSON bool) io.Writer {
	if asJSON {
		return nil
	}
	return stdio.Stderr
}

// adminAPI is what the CLI needs; both the control client and a local App
// provide it.
type adminAPI interface {
	ListGrants(ctx context.Context, all bool) ([]oauth.GrantSummary, error)
	ListProjects(ctx context.Context) ([]control.ProjectInfo, error)
	RevokeGrant(ctx context.Context, id string) error
	RevokeAll(ctx context.Context) (int, error)
	RotatePassword(ctx context.Context, password []byte) (int, error)
	ClearTools(ctx context.Context, label string) (control.ClearToolsResult, error)
	OrphanTools(ctx context.Context) (control.OrphanTools, error)
	ClearOrphanTools(ctx context.Context) (control.ClearToolsResult, error)
}

var (
	_ adminAPI = (*app.App)(nil)
	_ adminAPI = remoteAdmin{}
)

type remoteAdmin struct{ c *control.Client }

func (r remoteAdmin) ListGrants(ctx context.Context, all bool) ([]oauth.GrantSummary, error) {
	return r.c.Grants(ctx, all)
}
func (r remoteAdmin) RevokeGrant(ctx context.Context, id string) error {
	return r.c.RevokeGrant(ctx, id)
}
func (r remoteAdmin) RevokeAll(ctx context.Context) (int, error) { return r.c.RevokeAll(ctx) }
func (r remoteAdmin) ListProjects(ctx context.Context) ([]control.ProjectInfo, error) {
	return r.c.ProjectsWithTools(ctx)
}
func (r remoteAdmin) ClearTools(ctx context.Context, label string) (control.ClearToolsResult, error) {
	return r.c.ClearTools(ctx, label)
}
func (r remoteAdmin) OrphanTools(ctx context.Context) (control.OrphanTools, error) {
	return r.c.OrphanTools(ctx)
}
func (r remoteAdmin) ClearOrphanTools(ctx context.Context) (control.ClearToolsResult, error) {
	return r.c.ClearOrphanTools(ctx)
}
func (r remoteAdmin) RotatePassword(ctx context.Context, pw []byte) (int, error) {
	return r.c.RotatePassword(ctx, string(pw))
}

func runGrants(ctx context.Context, args []string, env Env, stdio IO) error {
	if len(args) == 0 {
		return usageError("usage: devspace grants list|revoke GRANT_ID|revoke-all")
	}
	sub, args := args[0], args[1:]
	mine, rest := splitFlags(args, map[string]bool{"all": true, "json": true})
	fs := flag.NewFlagSet("grants", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	all := fs.Bool("all", false, "include revoked and expired grants")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(mine); err != nil {
		return usageError(err.Error())
	}
	var id string
	if sub == "revoke" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return usageError("usage: devspace grants revoke GRANT_ID")
		}
		id, rest = rest[0], rest[1:]
	}
	cfg, err := loadConfig(rest, env)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return withAdminNote(ctx, cfg, noteUnlessJSON(stdio, *asJSON), func(adm adminAPI) error {
			grants, err := adm.ListGrants(ctx, *all)
			if err != nil {
				return err
			}
			return printGrants(stdio.Stdout, grants, *asJSON)
		})
	case "revoke":
		return withAdmin(ctx, cfg, func(adm adminAPI) error {
			err := adm.RevokeGrant(ctx, id)
			if errors.Is(err, oauth.ErrGrantNotFound) {
				return fmt.Errorf("no grant with ID %s (see `devspace grants list --all`)", id)
			}
			if err != nil && !errors.Is(err, oauth.ErrNotRecorded) {
				return err
			}
			fmt.Fprintf(stdio.Stdout, "Grant %s revoked.\n", id)
			warnNotRecorded(stdio.Stderr, err, cfg)
			return nil
		})
	case "revoke-all":
		return withAdmin(ctx, cfg, func(adm adminAPI) error {
			n, err := adm.RevokeAll(ctx)
			if err != nil && !errors.Is(err, oauth.ErrNotRecorded) {
				return err
			}
			fmt.Fprintf(stdio.Stdout, "Revoked %d grant(s); every token and execution has ended.\n", n)
			warnNotRecorded(stdio.Stderr, err, cfg)
			return nil
		})
	default:
		return usageError(fmt.Sprintf("unknown grants command %q", sub))
	}
}

// warnNotRecorded tells the Owner when the running server holds what they
// asked but could not write it (oauth.ErrNotRecorded: a full disk).
func warnNotRecorded(w io.Writer, err error, cfg *config.Config) {
	if errors.Is(err, oauth.ErrNotRecorded) {
		fmt.Fprintf(w, "warning: the running server holds this (the tokens are refused, the commands stopped), but could not record it: "+
			"the disk of %s is full. It retries every few seconds; free space there. Until it is recorded, a restart of the server would undo it.\n", cfg.StateDir)
	}
}

func printGrants(w io.Writer, grants []oauth.GrantSummary, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if grants == nil {
			grants = []oauth.GrantSummary{}
		}
		return enc.Encode(grants)
	}
	if len(grants) == 0 {
		fmt.Fprintln(w, "No grants.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GRANT\tCLIENT\tSCOPES\tPROJECTS\tCREATED\tSTATUS")
	for _, g := range grants {
		var projects []string
		for _, p := range g.Projects {
			label := p.Label
			if label == "" {
				label = p.Ref + " (removed)"
			}
			projects = append(projects, label)
		}
		status := "active"
		if g.RevokedAt != nil {
			status = "revoked (" + g.RevokeReason + ")"
		} else if g.ExpiresAt != nil && g.ExpiresAt.Before(time.Now()) {
			status = "expired"
		}
		name := g.ClientName
		if name == "" {
			name = g.ClientID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, name, strings.Join(g.Scopes, " "),
			strings.Join(projects, ","), g.CreatedAt.Local().Format("2006-01-02 15:04"), status)
	}
	return tw.Flush()
}

func runRotate(ctx context.Context, args []string, env Env, stdio IO) error {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return err
	}
	var password []byte
	generated := false
	if cfg.OwnerPasswordFile != "" {
		data, err := os.ReadFile(cfg.OwnerPasswordFile)
		if err != nil {
			return fmt.Errorf("DEVSPACE_OWNER_PASSWORD_FILE: %w", err)
		}
		password = []byte(strings.TrimRight(string(data), "\r\n"))
	} else {
		password = []byte(authstate.GeneratePassword())
		generated = true
	}
	return withAdmin(ctx, cfg, func(adm adminAPI) error {
		n, err := adm.RotatePassword(ctx, password)
		if err != nil && !errors.Is(err, oauth.ErrNotRecorded) {
			return err
		}
		fmt.Fprintf(stdio.Stdout, "Owner password changed; %d grant(s) ended.\n", n)
		warnNotRecorded(stdio.Stderr, err, cfg)
		if generated {
			fmt.Fprintf(stdio.Stdout, "New Owner password (shown once):\n\n    %s\n\n", password)
		}
		return nil
	})
}

func runProjects(ctx context.Context, args []string, env Env, stdio IO) error {
	mine, rest := splitFlags(args, map[string]bool{"json": true})
	fs := flag.NewFlagSet("projects", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(mine); err != nil {
		return usageError(err.Error())
	}
	cfg, err := loadConfig(rest, env)
	if err != nil {
		return err
	}
	// The running server's Projects first: the CLI's own environment may
	// not name them (DEVSPACE_PROJECTS is often set only for the server).
	var projects []control.ProjectInfo
	var orphans control.OrphanTools
	err = withAdminNote(ctx, cfg, noteUnlessJSON(stdio, *asJSON), func(adm adminAPI) error {
		var err error
		if projects, err = adm.ListProjects(ctx); err != nil {
			return err
		}
		if _, local := adm.(*app.App); local {
			return nil // orphans are the running server's to tell (runClearOrphanTools)
		}
		orphans, err = adm.OrphanTools(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		if projects == nil {
			projects = []control.ProjectInfo{}
		}
		enc := json.NewEncoder(stdio.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(projects)
	}
	if len(projects) == 0 {
		fmt.Fprintln(stdio.Stdout, "No Projects configured; set DEVSPACE_PROJECTS (for the server and for this command).")
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LABEL\tPROJECT REF\tPATH\tACCESSIBLE\tTOOLS")
	for _, p := range projects {
		tools := "-"
		if p.ToolsBytes != nil {
			tools = control.HumanBytes(*p.ToolsBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", p.Label, p.Ref, p.Path, p.Accessible, tools)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if orphans.Count > 0 {
		fmt.Fprintf(stdio.Stdout, "\n%d tool home(s) of no configured Project hold %s; `devspace projects clear-tools --orphans` removes them.\n",
			orphans.Count, control.HumanBytes(orphans.Bytes))
	}
	return nil
}

// runClearTools is `devspace projects clear-tools LABEL`: through the
// running server (which stops the commands that could write the tool
// home first), else on the tool directory directly.
func runClearTools(ctx context.Context, args []string, env Env, stdio IO) error {
	if len(args) > 0 && args[0] == "--orphans" {
		return runClearOrphanTools(ctx, args[1:], env, stdio)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError("usage: devspace projects clear-tools LABEL|--orphans")
	}
	label, rest := args[0], args[1:]
	cfg, err := loadConfig(rest, env)
	if err != nil {
		return err
	}
	return withAdmin(ctx, cfg, func(adm adminAPI) error {
		res, err := adm.ClearTools(ctx, label)
		if errors.Is(err, control.ErrProjectNotFound) {
			return fmt.Errorf("no Project labelled %q (see `devspace projects list`)", label)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdio.Stdout, "Cleared the tool home of %s: %s freed, %d command(s) stopped.\n", label, control.HumanBytes(res.FreedBytes), res.Stopped)
		return nil
	})
}

// runClearOrphanTools is `devspace projects clear-tools --orphans`: it
// removes the tool homes no configured Project has, through the running
// server only: its Projects are the ones that count. This shell's
// DEVSPACE_PROJECTS may name only some of them (or none: it is often set
// for the server alone), and every tool home of a Project it leaves out
// would look orphaned.
func runClearOrphanTools(ctx context.Context, args []string, env Env, stdio IO) error {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return err
	}
	return withAdmin(ctx, cfg, func(adm adminAPI) error {
		if _, local := adm.(*app.App); local {
			return fmt.Errorf("no DevSpace server answers on %s; start it and run this again: which tool homes are orphaned is the running server's Projects' say, not this shell's DEVSPACE_PROJECTS", cfg.ControlListen)
		}
		res, err := adm.ClearOrphanTools(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdio.Stdout, "Removed %d tool home(s) of no configured Project: %s freed.\n", res.Removed, control.HumanBytes(res.FreedBytes))
		return nil
	})
}

func runHealthcheck(ctx context.Context, args []string, env Env, stdio IO) error {
	cfg, err := loadConfig(args, env)
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	// Host must pass the allowlist: use the public host when it is known.
	if len(cfg.AllowedHosts) > 0 {
		req.Host = cfg.AllowedHosts[0]
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: /healthz answered %s", resp.Status)
	}
	fmt.Fprintln(stdio.Stdout, "ok")
	return nil
}
