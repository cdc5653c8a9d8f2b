package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/control"
	"github.com/devspace-dev/devspace/internal/oauth"
)

// eventWords says in words what an audit event of kind did, for the
// Connect page; false for the kinds it does not show.
func eventWords(kind string) (string, bool) {
	switch kind {
	case "owner_password_failed":
		return "wrong Owner password", true
	case "consent_denied":
		return "denied on the consent page", true
	case "grant_created":
		return "approved: grant created", true
	case "grant_revoked":
		return "grant revoked", true
	case "revoke_all":
		return "every grant revoked", true
	case "password_rotated":
		return "Owner password rotated (every grant ended)", true
	}
	return "", false
}

type connectData struct {
	Conn    Connection
	Clients []clientRow
	Events  []eventRow
}

// clientRow is one registered client: registrations are not audited (any
// client may register, and the audit log is kept), they are read from the
// bounded client table.
type clientRow struct {
	Age, Name, RedirectHosts string
	Used                     bool
}

type eventRow struct {
	Age, What, Client, Ref string
}

func (c *Console) connectPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d := connectData{Conn: c.opts.Admin.Connection()}
	now := c.now()
	clients, err := c.opts.Admin.RecentClients(r.Context(), 10)
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: read the registered clients", "err", err)
	}
	for _, cl := range clients {
		var hosts []string
		for _, u := range cl.RedirectURIs {
			if pu, err := url.Parse(u); err == nil && !slices.Contains(hosts, pu.Host) {
				hosts = append(hosts, pu.Host)
			}
		}
		d.Clients = append(d.Clients, clientRow{Age: ago(now, cl.CreatedAt), Name: cl.Name, RedirectHosts: strings.Join(hosts, ", "), Used: cl.UsedAt != nil})
	}
	events, err := c.opts.Admin.AuditEvents(r.Context(), 200)
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: read the audit log", "err", err)
	}
	for _, e := range events {
		what, ok := eventWords(e.Kind)
		if !ok {
			continue
		}
		var detail struct {
			ClientName string `json:"client_name"`
			Via        string `json:"via"`
		}
		_ = json.Unmarshal([]byte(e.Detail), &detail)
		if detail.Via == "console" {
			what = "wrong Owner password (console sign-in)"
		}
		d.Events = append(d.Events, eventRow{Age: ago(now, e.At), What: what, Client: detail.ClientName, Ref: e.ClientRef})
		if len(d.Events) == 20 {
			break
		}
	}
	c.render(w, r, http.StatusOK, "connect", view{Title: "Connect", Nav: "connect", CSRF: ss.csrf, Data: d})
}

type grantRow struct {
	oauth.GrantSummary
	Created, LastUsed, Expires string
	Sessions                   int
	ProjectLabels              []string
}

func (c *Console) grantsPage(w http.ResponseWriter, r *http.Request, ss *session) {
	grants, err := c.opts.Admin.ListGrants(r.Context(), false)
	if err != nil {
		c.failed(w, r, "Listing grants", err)
		return
	}
	sessions := c.opts.Admin.SessionsByGrant()
	lastCall := map[string]time.Time{}
	if c.opts.Activity != nil {
		for _, call := range c.opts.Activity.Recent(500) {
			if call.At.After(lastCall[call.GrantID]) {
				lastCall[call.GrantID] = call.At
			}
		}
	}
	now := c.now()
	rows := make([]grantRow, 0, len(grants))
	for _, g := range grants {
		row := grantRow{GrantSummary: g, Created: g.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"), Sessions: sessions[g.ID]}
		last := lastCall[g.ID]
		if g.LastIssuedAt != nil && g.LastIssuedAt.After(last) {
			last = *g.LastIssuedAt
		}
		row.LastUsed = ago(now, last)
		if g.ExpiresAt != nil {
			row.Expires = g.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		for _, p := range g.Projects {
			label := p.Label
			if label == "" {
				label = "(no longer configured)"
			}
			row.ProjectLabels = append(row.ProjectLabels, label)
		}
		rows = append(rows, row)
	}
	c.render(w, r, http.StatusOK, "grants", view{Title: "Grants", Nav: "grants", CSRF: ss.csrf, Flash: flashOf(r), Data: rows})
}

func (c *Console) revokeGrant(w http.ResponseWriter, r *http.Request, _ *session) {
	id := r.PostForm.Get("grant")
	err := c.opts.Admin.RevokeGrant(r.Context(), id)
	switch {
	case err == nil:
		back(w, r, "/grants", "revoked")
	case notRecorded(err):
		back(w, r, "/grants", "revoked-unrecorded")
	case errorsIsNotFound(err):
		back(w, r, "/grants", "no-grant")
	default:
		c.failed(w, r, "Revoking the grant", err)
	}
}

func (c *Console) confirmRevokeAll(w http.ResponseWriter, r *http.Request, ss *session) {
	c.render(w, r, http.StatusOK, "revokeall", view{Title: "Revoke every grant", Nav: "grants", CSRF: ss.csrf})
}

func (c *Console) revokeAll(w http.ResponseWriter, r *http.Request, _ *session) {
	if r.PostForm.Get("confirm") != "yes" {
		back(w, r, "/grants", "unconfirmed")
		return
	}
	n, err := c.opts.Admin.RevokeAll(r.Context())
	if err != nil && !notRecorded(err) {
		c.failed(w, r, "Revoking every grant", err)
		return
	}
	// Every console session ended with it (App.RevokeAll): sign in again.
	setSessionCookie(w, r, "", baseOf(r), true)
	msg := fmt.Sprintf("%d grant(s) revoked. Every console session ended too: sign in again with `devspace admin`.", n)
	if err != nil {
		msg += " Writing it to the database failed and is retried."
	}
	c.render(w, r, http.StatusOK, "message", view{Title: "Every grant revoked", Flash: msg})
}

func (c *Console) passwordPage(w http.ResponseWriter, r *http.Request, ss *session) {
	c.render(w, r, http.StatusOK, "password", view{Title: "Rotate the Owner password", Nav: "grants", CSRF: ss.csrf})
}

func (c *Console) rotatePassword(w http.ResponseWriter, r *http.Request, ss *session) {
	pw, again := r.PostForm.Get("password"), r.PostForm.Get("again")
	var problem string
	switch {
	case r.PostForm.Get("confirm") != "yes":
		problem = "Tick the box to confirm: every grant ends."
	case len(pw) < 8 || len(pw) > 1024:
		problem = "The new password must be 8 to 1024 bytes long."
	case pw != again:
		problem = "The two passwords differ."
	}
	if problem != "" {
		c.render(w, r, http.StatusBadRequest, "password", view{Title: "Rotate the Owner password", Nav: "grants", CSRF: ss.csrf, Error: problem})
		return
	}
	if !c.currentPasswordOK(w, r, ss) {
		return
	}
	n, err := c.opts.Admin.RotatePassword(r.Context(), []byte(pw))
	if err != nil && !notRecorded(err) {
		c.failed(w, r, "Rotating the password", err)
		return
	}
	setSessionCookie(w, r, "", baseOf(r), true)
	msg := fmt.Sprintf("The Owner password was changed and %d grant(s) ended. Every console session ended too: sign in again.", n)
	if err != nil {
		msg += " Writing it to disk failed and is retried; a restart before then would undo it."
	}
	c.render(w, r, http.StatusOK, "message", view{Title: "Password rotated", Flash: msg})
}

// currentPasswordOK checks the rotation form's current Owner password
// (with the sign-in's back-off) and answers the form when it is not
// right. A session cookie is no proof of the Owner: browsers send it to
// every port of the console's host, so a page a grant's command serves on
// 127.0.0.1 receives it; without this check that command could choose the
// new password and approve itself on the consent page.
func (c *Console) currentPasswordOK(w http.ResponseWriter, r *http.Request, ss *session) bool {
	again := func(status int, msg string) {
		c.render(w, r, status, "password", view{Title: "Rotate the Owner password", Nav: "grants", CSRF: ss.csrf, Error: msg})
	}
	current := r.PostForm.Get("current")
	if current == "" {
		again(http.StatusForbidden, "Enter the current Owner password.")
		return false
	}
	ok, wait, err := c.opts.Admin.CheckOwnerPassword(r.Context(), []byte(current))
	switch {
	case err != nil:
		c.log.ErrorContext(r.Context(), "console password check failed", "err", err)
		again(http.StatusServiceUnavailable, "The current password could not be checked. Try again.")
	case wait > 0:
		secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
		w.Header().Set("Retry-After", secs)
		again(http.StatusTooManyRequests, "Too many password attempts. Wait "+secs+" seconds and try again.")
	case !ok:
		c.log.WarnContext(r.Context(), "console password rotation with a wrong current password refused")
		again(http.StatusForbidden, "The current password is wrong.")
	}
	return err == nil && wait <= 0 && ok
}

type activityData struct {
	Available bool
	Calls     []callRow
	Commands  []commandRow
	Patches   []patchRow
	Undos     []undoRow
	Problem   string
}

type callRow struct {
	Age, Tool, Grant, Client, Project, Duration, Code string
}

type commandRow struct {
	ID, Grant, Client, Project, CommandLine, Age string
	Running                                      bool
}

type patchRow struct {
	Age, Grant, Project, Diff string
	Files                     []string
}

type undoRow struct {
	Age, Grant, Project string
	Files               []string
	Undone              bool
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

func (c *Console) callRowOf(now time.Time, call Call) callRow {
	code := call.Code
	if code == "" {
		code = "ok"
	}
	return callRow{Age: ago(now, call.At), Tool: call.Tool, Grant: shortID(call.GrantID), Client: call.Client,
		Project: call.Project, Duration: call.Duration.Round(time.Millisecond).String(), Code: code}
}

func (c *Console) commandRows(now time.Time, cmds []Command) []commandRow {
	rows := make([]commandRow, 0, len(cmds))
	for _, cmd := range cmds {
		rows = append(rows, commandRow{ID: cmd.ID, Grant: shortID(cmd.GrantID), Client: cmd.Client, Project: cmd.Project,
			CommandLine: cmd.CommandLine, Age: ago(now, cmd.Started), Running: cmd.Running})
	}
	return rows
}

func (c *Console) activityPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d := activityData{Available: c.opts.Activity != nil}
	if a := c.opts.Activity; a != nil {
		now := c.now()
		for _, call := range a.Recent(50) {
			d.Calls = append(d.Calls, c.callRowOf(now, call))
		}
		var problems []string
		if cmds, err := a.RunningCommands(r.Context()); err != nil {
			c.log.ErrorContext(r.Context(), "console: running commands", "err", err)
			problems = append(problems, "running commands")
		} else {
			d.Commands = c.commandRows(now, cmds)
		}
		if ps, err := a.RecentPatches(r.Context(), 20); err != nil {
			c.log.ErrorContext(r.Context(), "console: recent patches", "err", err)
			problems = append(problems, "patches")
		} else {
			for _, p := range ps {
				d.Patches = append(d.Patches, patchRow{Age: ago(now, p.At), Grant: shortID(p.GrantID), Project: p.Project, Files: p.Files, Diff: p.Diff})
			}
		}
		if us, err := a.UndoHistory(r.Context(), 20); err != nil {
			c.log.ErrorContext(r.Context(), "console: undo history", "err", err)
			problems = append(problems, "undo history")
		} else {
			for _, u := range us {
				d.Undos = append(d.Undos, undoRow{Age: ago(now, u.At), Grant: shortID(u.GrantID), Project: u.Project, Files: u.Files, Undone: u.Undone})
			}
		}
		if len(problems) > 0 {
			d.Problem = "Could not read: " + strings.Join(problems, ", ") + " (see the server log)."
		}
	}
	c.render(w, r, http.StatusOK, "activity", view{Title: "Activity", Nav: "activity", CSRF: ss.csrf, Flash: flashOf(r), Data: d})
}

func (c *Console) interrupt(w http.ResponseWriter, r *http.Request, _ *session) {
	if c.opts.Activity == nil {
		back(w, r, "/activity", "")
		return
	}
	if err := c.opts.Activity.InterruptCommand(r.Context(), r.PostForm.Get("command")); err != nil {
		c.log.WarnContext(r.Context(), "console: interrupt", "err", err)
		back(w, r, "/activity", "not-interrupted")
		return
	}
	back(w, r, "/activity", "interrupted")
}

type healthData struct {
	Health   Health
	Findings []Finding
	Problems int
}

func (c *Console) healthPage(w http.ResponseWriter, r *http.Request, ss *session) {
	d := healthData{Health: c.opts.Admin.Health(r.Context()), Findings: c.opts.Admin.Doctor(r.Context())}
	for _, f := range d.Findings {
		if f.Level == "problem" {
			d.Problems++
		}
	}
	c.render(w, r, http.StatusOK, "health", view{Title: "Health", Nav: "health", CSRF: ss.csrf, Data: d})
}

func (c *Console) diagnostic(w http.ResponseWriter, r *http.Request, _ *session) {
	b, err := c.opts.Admin.Diagnostic(r.Context())
	if err != nil {
		c.failed(w, r, "Building the diagnostic bundle", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="devspace-diagnostic-`+c.now().UTC().Format("20060102-150405")+`.json"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

type projectsData struct {
	Projects []ProjectDetail
	Orphans  control.OrphanTools
}

func (c *Console) projectsPage(w http.ResponseWriter, r *http.Request, ss *session) {
	var d projectsData
	var err error
	if d.Projects, err = c.opts.Admin.ProjectDetails(r.Context()); err != nil {
		c.failed(w, r, "Listing Projects", err)
		return
	}
	if d.Orphans, err = c.opts.Admin.OrphanTools(r.Context()); err != nil {
		c.failed(w, r, "Listing the tool homes", err)
		return
	}
	c.render(w, r, http.StatusOK, "projects", view{Title: "Projects", Nav: "projects", CSRF: ss.csrf, Flash: flashOf(r), Data: d})
}

// clearTools empties a Project's tool home, the way `devspace projects
// clear-tools` does; the box must be ticked, since its writing commands
// are stopped with it.
func (c *Console) clearTools(w http.ResponseWriter, r *http.Request, _ *session) {
	if r.PostForm.Get("confirm") != "yes" {
		back(w, r, "/projects", "tools-unconfirmed")
		return
	}
	_, err := c.opts.Admin.ClearTools(r.Context(), r.PostForm.Get("project"))
	switch {
	case err == nil:
		back(w, r, "/projects", "tools-cleared")
	case errors.Is(err, control.ErrProjectNotFound):
		back(w, r, "/projects", "no-project")
	default:
		c.failed(w, r, "Clearing the tool home", err)
	}
}

// clearOrphanTools removes the tool homes no configured Project has, as
// `devspace projects clear-tools --orphans` does.
func (c *Console) clearOrphanTools(w http.ResponseWriter, r *http.Request, _ *session) {
	if r.PostForm.Get("confirm") != "yes" {
		back(w, r, "/projects", "orphans-unconfirmed")
		return
	}
	_, err := c.opts.Admin.ClearOrphanTools(r.Context())
	switch {
	case err == nil:
		back(w, r, "/projects", "orphans-removed")
	case errors.Is(err, control.ErrOrphansUnsure):
		back(w, r, "/projects", "orphans-unsure")
	default:
		c.failed(w, r, "Removing the orphaned tool homes", err)
	}
}

// sizeOf writes n bytes for a person, as the CLI does.
func sizeOf(n int64) string { return control.HumanBytes(n) }

func itoa(n int) string { return strconv.Itoa(n) }
