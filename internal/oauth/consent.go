package oauth

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/devspace-dev/devspace/internal/displayname"
)

// The consent page is server-rendered and works without JavaScript. Its
// CSP allows no external resource at all; form-action names the client's
// redirect origin because the approving POST is answered with a redirect
// there. It is parsed on first use, not at package init: every
// command's launcher is this binary too, and runs every package's init
// before it can start the command (docs/performance.md, "Command start").
var consentTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>DevSpace — {{.Title}}</title>
<style>
body{font:16px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:#f5f6f8;color:#1d2330;margin:0}
main{max-width:30rem;margin:3rem auto;background:#fff;border-radius:12px;padding:1.75rem 2rem;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.3rem;margin:0 0 1rem}
.who{background:#eef2fb;border-radius:8px;padding:.75rem 1rem;margin-bottom:1rem}
.who b,.who bdi{overflow-wrap:anywhere}
.who ul{margin:.3rem 0 0;padding-left:1.2rem}
.terms{font-size:.9rem;color:#3d4556;border-top:1px solid #e3e6ec;padding-top:.75rem;margin-top:1.25rem}
.who .host{font-size:1.15rem;margin-bottom:.3rem}
.err{background:#fdecea;color:#8a1c12;border-radius:8px;padding:.6rem .9rem;margin-bottom:1rem}
label{display:block;margin:.35rem 0}
fieldset{border:1px solid #d8dce5;border-radius:8px;margin:0 0 1rem;padding:.5rem 1rem}
legend{font-weight:600;padding:0 .3rem}
input[type=password]{width:100%;box-sizing:border-box;padding:.55rem;font-size:1rem;border:1px solid #b9c0cf;border-radius:6px;margin:.3rem 0 1rem}
button{font-size:1rem;padding:.55rem 1.2rem;border-radius:6px;border:1px solid #2456c9;background:#2f66e0;color:#fff;cursor:pointer;margin-right:.5rem}
button.secondary{background:#fff;color:#2456c9}
code{font-size:.9em}
small{color:#5b6475}
</style></head><body><main>
<h1>{{.Title}}</h1>
{{if .Error}}<p class="err" role="alert">{{.Error}}</p>{{end}}
{{if .Client}}<div class="who">
<div class="host">Returns to <b>{{.RedirectHost}}</b></div>
<div>Name given by the application (unverified): <bdi>{{.Client}}</bdi></div>
<div>It asks to:<ul>{{range .RequestedScopes}}<li>{{.Meaning}} <small>(<code>{{.Name}}</code>)</small></li>{{end}}</ul></div>
</div>{{end}}
{{if eq .Step 1}}
<form method="post" action="/oauth/authorize">
<input type="hidden" name="request" value="{{.Token}}">
<label for="password">Owner password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required autofocus>
<button type="submit">Continue</button>
</form>
<p><small>Only the owner of this DevSpace can approve access. Projects are listed after the password is checked.</small></p>
{{else if eq .Step 2}}
<form method="post" action="/oauth/authorize">
<input type="hidden" name="selection" value="{{.Token}}">
<fieldset><legend>Projects this application may use</legend>
{{range .Projects}}<label><input type="checkbox" name="project" value="{{.Ref}}"{{if .Checked}} checked{{end}}> {{.Label}}</label>
{{else}}<p>No Projects are approved in the server configuration (DEVSPACE_PROJECTS).</p>{{end}}
</fieldset>
<fieldset><legend>Permissions</legend>
{{range .Scopes}}<label><input type="checkbox" name="scope" value="{{.Name}}"{{if .Checked}} checked{{end}}> {{.Meaning}} <small>(<code>{{.Name}}</code>)</small></label>
{{end}}</fieldset>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>
{{end}}
{{if .Step}}<p class="terms">This access lasts until you revoke it{{if .MaxLifetime}}, and {{.MaxLifetime}} at most{{end}}; an application that stays away for {{.IdleLifetime}} has to ask again. To end it, run <code>devspace grants list</code> on the DevSpace machine, then <code>devspace grants revoke GRANT_ID</code>; <code>devspace grants revoke-all</code> ends every grant.</p>{{end}}
</main></body></html>
`))
})

type consentProject struct {
	Ref, Label string
	Checked    bool
}

type consentScope struct {
	Name, Meaning string
	Checked       bool
}

type consentPage struct {
	Title        string
	Step         int
	Error        string
	Client       string
	RedirectHost string
	Requested    []string
	// RequestedScopes are Requested with their meanings, in plain words.
	RequestedScopes []consentScope
	// MaxLifetime ("" when unlimited) and IdleLifetime say how long a
	// grant lasts, in words.
	MaxLifetime, IdleLifetime string
	Token                     string
	Projects                  []consentProject
	Scopes                    []consentScope
}

var scopeMeaning = map[string]string{
	ScopeRead:    "list, open and read the chosen Projects",
	ScopeWrite:   "change files in the chosen Projects",
	ScopeExecute: "run commands in the chosen Projects. Each command is confined by the kernel: it sees the system read-only, the one Project it runs in and a private scratch folder, nothing else (not your other Projects, not DevSpace's own data). With \"change files\" also granted, a command may change that Project; without it, commands run read-only",
}

// lifetimes fills in how long the grant p offers lasts, and the requested
// scopes in words.
func (s *Server) lifetimes(p *consentPage) {
	for _, sc := range p.Requested {
		p.RequestedScopes = append(p.RequestedScopes, consentScope{Name: sc, Meaning: scopeMeaning[sc]})
	}
	p.IdleLifetime = humanDuration(s.opts.RefreshTTL)
	if s.opts.GrantMaxLifetime > 0 {
		p.MaxLifetime = humanDuration(s.opts.GrantMaxLifetime)
	}
}

// humanDuration says d in days or hours.
func humanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

func (s *Server) writePage(w http.ResponseWriter, status int, formTarget string, p consentPage) {
	h := w.Header()
	formAction := "'self'"
	if formTarget != "" {
		formAction += " " + formTarget
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formAction+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // keeps Origin on our own POSTs, sends nothing cross-site
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := consentTemplate().Execute(w, p); err != nil {
		s.log.Error("render consent page", "err", err)
	}
}

// renderError shows e as the error page: its status, and its description
// as the message for the owner.
func (s *Server) renderError(w http.ResponseWriter, e *oauthError) {
	s.writePage(w, e.httpStatus(), "", consentPage{Title: "Authorization failed", Error: e.description})
}

// clientLabel is the name the client gave, cleaned again here because rows
// stored by older versions were cleaned by a weaker rule.
func clientLabel(req *authRequest) string {
	if n := displayname.Clean(req.clientName); n != "" {
		return n
	}
	return "Unnamed application"
}

func redirectHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

func (s *Server) renderPassword(w http.ResponseWriter, status int, token string, req *authRequest, msg string) {
	p := consentPage{Title: "Connect an application to DevSpace", Step: 1, Error: msg,
		Client: clientLabel(req), RedirectHost: redirectHost(req.redirectURI), Requested: req.scopes, Token: token}
	s.lifetimes(&p)
	s.writePage(w, status, "", p)
}

func (s *Server) renderConsent(w http.ResponseWriter, status int, token string, req *authRequest, checkedScopes, checkedProjects []string, msg string) {
	p := consentPage{Title: "Choose what to share", Step: 2, Error: msg, Client: clientLabel(req),
		RedirectHost: redirectHost(req.redirectURI), Requested: req.scopes, Token: token}
	for _, root := range s.opts.Projects.Roots() {
		p.Projects = append(p.Projects, consentProject{Ref: root.Ref, Label: root.Label,
			Checked: slices.Contains(checkedProjects, root.Ref)})
	}
	for _, sc := range s.opts.Scopes {
		p.Scopes = append(p.Scopes, consentScope{Name: sc, Meaning: scopeMeaning[sc],
			Checked: slices.Contains(checkedScopes, sc)})
	}
	s.lifetimes(&p)
	s.writePage(w, status, redirectOrigin(req.redirectURI), p)
}
