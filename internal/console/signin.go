package console

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"
)

// formCookie carries the sign-in form's token before any session exists
// (a double-submit check: a page elsewhere cannot read it to fill in the
// form, and SameSite=Strict keeps it off cross-site posts).
const formCookie = "devspace_console_form"

// signinPage consumes a sign-in link (?token=…: a session, then a redirect
// that takes the token out of the address bar and history), or shows the
// password form.
func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !c.auth.useLink(tok) {
			c.log.WarnContext(r.Context(), "console sign-in link refused (unknown, expired or used)")
			c.renderSignin(w, r, http.StatusForbidden, "This sign-in link expired or was already used. Run `devspace admin` for a new one.")
			return
		}
		c.signedIn(w, r, "link")
		return
	}
	c.renderSignin(w, r, http.StatusOK, "")
}

func (c *Console) renderSignin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	tok := randomToken()
	http.SetCookie(w, &http.Cookie{Name: formCookie, Value: tok, Path: "/signin", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: 600})
	c.render(w, r, status, "signin", view{Title: "Sign in", CSRF: tok, Error: msg})
}

// signinPassword checks the Owner password with the consent page's
// reservation and back-off.
func (c *Console) signinPassword(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "The form could not be read.", http.StatusBadRequest)
		return
	}
	ck, err := r.Cookie(formCookie)
	got := r.PostForm.Get("csrf")
	if err != nil || got == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(got)) != 1 {
		c.log.WarnContext(r.Context(), "console sign-in form without its token refused")
		c.renderSignin(w, r, http.StatusForbidden, "This form is stale. Try again.")
		return
	}
	ok, wait, err := c.opts.Admin.CheckOwnerPassword(r.Context(), []byte(r.PostForm.Get("password")))
	switch {
	case err != nil:
		c.log.ErrorContext(r.Context(), "console password check failed", "err", err)
		c.renderSignin(w, r, http.StatusServiceUnavailable, "The password could not be checked. Try again.")
	case wait > 0:
		secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
		w.Header().Set("Retry-After", secs)
		c.renderSignin(w, r, http.StatusTooManyRequests, "Too many password attempts. Wait "+secs+" seconds and try again.")
	case !ok:
		c.renderSignin(w, r, http.StatusUnauthorized, "Wrong password.")
	default:
		http.SetCookie(w, &http.Cookie{Name: formCookie, Path: "/signin", MaxAge: -1})
		c.signedIn(w, r, "password")
	}
}

// signedIn opens a session for r's browser and sends it to the console,
// under the session's place.
func (c *Console) signedIn(w http.ResponseWriter, r *http.Request, via string) {
	tok, place := c.auth.start()
	base := placePrefix + place
	setSessionCookie(w, r, tok, base, false)
	c.log.InfoContext(r.Context(), "console signed in", "via", via)
	http.Redirect(w, r, base+"/", http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, _ *session) {
	if _, tok := c.sessionOf(r); tok != "" {
		c.auth.end(tok)
	}
	setSessionCookie(w, r, "", baseOf(r), true)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
