package console

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/oauth"
)

// maxForm bounds a console form's body.
const maxForm = 64 << 10

func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	files, _ := fs.Sub(static, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(files)))
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "icon.svg")
	})
	m.HandleFunc("GET /signin", c.signinPage)
	m.HandleFunc("POST /signin", c.signinPassword)
	// The console's own address: its pages are under a session's place.
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
	})
	m.Handle(placePrefix+"{place}/", c.placed(c.sessionRoutes()))
	return m
}

// sessionRoutes are the pages, streams and actions of a session, by their
// path under its place.
func (c *Console) sessionRoutes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("POST /signout", c.action(c.signout))
	m.HandleFunc("GET /{$}", c.page(c.connectPage))
	m.HandleFunc("GET /grants", c.page(c.grantsPage))
	m.HandleFunc("POST /grants/revoke", c.action(c.revokeGrant))
	m.HandleFunc("GET /grants/revoke-all", c.page(c.confirmRevokeAll))
	m.HandleFunc("POST /grants/revoke-all", c.action(c.revokeAll))
	m.HandleFunc("GET /owner/password", c.page(c.passwordPage))
	m.HandleFunc("POST /owner/password", c.action(c.rotatePassword))
	m.HandleFunc("GET /activity", c.page(c.activityPage))
	m.HandleFunc("GET /activity/stream", c.stream(c.activityStream))
	m.HandleFunc("GET /activity/output", c.stream(c.outputStream))
	m.HandleFunc("POST /activity/interrupt", c.action(c.interrupt))
	m.HandleFunc("GET /health", c.page(c.healthPage))
	m.HandleFunc("GET /health/diagnostic", c.page(c.diagnostic))
	m.HandleFunc("GET /charts", c.page(c.chartsPage))
	m.HandleFunc("GET /projects", c.page(c.projectsPage))
	m.HandleFunc("POST /projects/clear-tools", c.action(c.clearTools))
	m.HandleFunc("POST /projects/clear-orphan-tools", c.action(c.clearOrphanTools))
	return m
}

// placeKey carries a request's place (the session's path segment) to its
// handler.
type placeKey struct{}

// placed serves inner with r's path under its place: /s/<place>/grants is
// /grants, and the place rides in the context (placeOf, baseOf).
func (c *Console) placed(inner http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		place := r.PathValue("place")
		r2 := r.WithContext(context.WithValue(r.Context(), placeKey{}, place))
		u := *r.URL
		u.Path, u.RawPath = strings.TrimPrefix(r.URL.Path, placePrefix+place), ""
		r2.URL = &u
		inner.ServeHTTP(w, r2)
	}
}

// placeOf is r's place ("" outside one).
func placeOf(r *http.Request) string {
	p, _ := r.Context().Value(placeKey{}).(string)
	return p
}

// baseOf is the path r's session's pages are under ("" outside a place).
func baseOf(r *http.Request) string {
	if p := placeOf(r); p != "" {
		return placePrefix + p
	}
	return ""
}

// view is what every page template gets.
type view struct {
	Base   string // the session's place, every link's prefix (baseOf)
	Title  string
	Nav    string // the active section
	CSRF   string
	Flash  string
	Error  string
	Signed bool
	Data   any
}

// page wraps a GET handler that needs a session: without one the browser
// is sent to the sign-in page.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, _ := c.sessionOf(r)
		if ss == nil {
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		h(w, r, ss)
	}
}

// stream wraps an event-stream handler: a session is required, and its
// absence is a plain 401 (EventSource does not follow a sign-in page).
// The handler asks alive before each event and tick, and ends the stream
// when it says no: a stream lives as long as its session (sign-out,
// revoke-all, rotation, the idle and absolute timeouts), not as long as
// the browser keeps the page open. An open stream is not a use: it does
// not hold the session off its idle timeout.
func (c *Console) stream(h func(w http.ResponseWriter, r *http.Request, alive func() bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, tok := c.sessionOf(r)
		if ss == nil {
			http.Error(w, "Sign in first.", http.StatusUnauthorized)
			return
		}
		h(w, r, func() bool { return c.auth.alive(tok) })
	}
}

// action wraps a state-changing handler: POST only (the mux pattern), a
// session, a form of bounded size, and the session's CSRF token.
func (c *Console) action(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, _ := c.sessionOf(r)
		if ss == nil {
			http.Error(w, "Sign in first.", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "The form could not be read.", http.StatusBadRequest)
			return
		}
		if !ss.csrfOK(r.PostForm.Get("csrf")) {
			c.log.WarnContext(r.Context(), "console action without its CSRF token refused", "path", r.URL.Path)
			http.Error(w, "This form is stale or did not come from the console. Reload the page and try again.", http.StatusForbidden)
			return
		}
		h(w, r, ss)
	}
}

// render writes page name with v; a template error is logged and answered
// as a plain 500 (nothing half-written: the page is built first).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	var buf bytes.Buffer
	v.Base = baseOf(r)
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		c.log.ErrorContext(r.Context(), "render console page", "page", name, "err", err)
		http.Error(w, "The page could not be drawn; see the server log.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// flashes are the one-line messages shown after an action, by the key
// the redirect carries: the address names a message, it never holds one,
// so a link written elsewhere (opened from a chat app or a terminal, which
// the guard lets through as Sec-Fetch-Site: none) cannot put its own words
// on a console page.
var flashes = map[string]string{
	"revoked":             "Grant revoked: its tokens no longer work and its commands were stopped.",
	"revoked-unrecorded":  "Grant revoked in the running server; writing it to the database failed and is retried (a restart before then would undo it).",
	"no-grant":            "No active grant with that ID.",
	"unconfirmed":         "Nothing revoked: the confirmation box was not ticked.",
	"interrupted":         "Interrupt sent: the command gets SIGINT, then is killed if it is still running after 1 s.",
	"not-interrupted":     "The command could not be interrupted (it may have ended already).",
	"tools-cleared":       "Tool home cleared: its tools and caches were deleted, and the commands that could write it were stopped.",
	"tools-unconfirmed":   "Nothing cleared: the confirmation box was not ticked.",
	"no-project":          "No Project with that label.",
	"orphans-removed":     "The tool homes of no configured Project were removed.",
	"orphans-unconfirmed": "Nothing removed: the confirmation box was not ticked.",
	"orphans-unsure":      "Nothing removed: a configured Project is not accessible, or none is configured, so a Project's tool home cannot be told from an orphan's.",
}

// back redirects to path after an action, with the key of a message of
// flashes ("" for none).
func back(w http.ResponseWriter, r *http.Request, path, flash string) {
	path = baseOf(r) + path
	if flash != "" {
		path += "?done=" + url.QueryEscape(flash)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// flashOf returns the message whose key back put in the URL; "" for an
// unknown key.
func flashOf(r *http.Request) string { return flashes[r.URL.Query().Get("done")] }

// failed logs an action's error and answers with a page that does not
// echo it.
func (c *Console) failed(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.log.ErrorContext(r.Context(), "console action failed", "action", what, "err", err)
	c.render(w, r, http.StatusInternalServerError, "message", view{Title: "Something went wrong",
		Error: what + " failed; the server log says why."})
}

func errorsIsNotFound(err error) bool { return errors.Is(err, oauth.ErrGrantNotFound) }

// notRecorded is the emergency path's "holds now, written later" outcome.
func notRecorded(err error) bool { return errors.Is(err, oauth.ErrNotRecorded) }

// ago renders a time as a short age ("12 s", "4 min", "3 h", "2 d"); "—"
// for the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute: // a clock a little behind the event's reads 0 s
		return itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		return itoa(int(d/time.Hour)) + " h"
	default:
		return itoa(int(d/(24*time.Hour))) + " d"
	}
}
