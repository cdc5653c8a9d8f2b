// Package apptest starts a real DevSpace (real SQLite in a temp dir, real
// auth.json, real listeners over loopback) for integration tests, and
// drives the OAuth flow the way a host does. It is test support: only
// _test.go files import it.
package apptest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/process"
	"github.com/devspace-dev/devspace/internal/sandbox"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// Password is the Owner password of every test instance.
const Password = "correct horse battery staple"

// FastParams keep Argon2id cheap in tests.
var FastParams = authstate.Params{Memory: 256, Iterations: 1, Parallelism: 1}

// Options shape an instance.
type Options struct {
	Projects []string          // labels of project directories to create; default {"alpha","beta"}
	Env      map[string]string // extra configuration variables
	// AllowLoopbackMetadata enables client ID metadata documents served
	// from a loopback test server.
	AllowLoopbackMetadata bool
	MetadataHTTPClient    *http.Client
	// SandboxProbe replaces the kernel's Landlock probe (app.Options);
	// nil asks the kernel. SetSandboxProbe changes it for a Restart.
	SandboxProbe func() sandbox.Status
	// DiscardLogs drops the instance's logs instead of keeping them in
	// Env.Logs, for tests that measure memory.
	DiscardLogs bool
	// OnStatement is called after every SQL statement of the instance's
	// store (app.Options.OnStatement), to count a call path's statements.
	OnStatement func(sql string)
	// Dir holds the state directory ("state") and the Projects
	// ("projects/<label>"); empty means a t.TempDir(). The test owns it.
	Dir string
}

// Env is a running instance.
type Env struct {
	t        testing.TB
	opts     Options
	URL      string // public base URL
	StateDir string
	Roots    map[string]string // label → directory
	Clock    *testutil.Clock   // the instance's clock: starts at the real time, moves only when advanced
	Logs     *testutil.SyncBuffer
	App      *app.App
	Config   *config.Config
	ln       net.Listener
	srv      *httptest.Server
	ctl      *httptest.Server
	ctlLn    net.Listener // the control API's, bound before the App is built
	conLn    net.Listener // the console's, bound before the App is built
	con      *httptest.Server
	env      map[string]string
	// ControlAddr is where the control API listens (the CLI's target).
	ControlAddr string
	// ConsoleURL is the Owner's console's origin ("" when it is off).
	ConsoleURL string
}

// Start creates state and project directories and serves the public
// listener on a loopback httptest server.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Projects == nil {
		opts.Projects = []string{"alpha", "beta"}
	}
	base := opts.Dir
	if base == "" {
		base = t.TempDir()
	}
	e := &Env{t: t, opts: opts, StateDir: filepath.Join(base, "state"), Roots: map[string]string{},
		Clock: testutil.NewClock(time.Now()), Logs: &testutil.SyncBuffer{}}
	var specs []string
	for _, label := range opts.Projects {
		dir := filepath.Join(base, "projects", label)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		e.Roots[label] = dir
		specs = append(specs, label+"="+dir)
	}
	if _, err := authstate.Init(e.StateDir, authstate.InitOptions{Password: []byte(Password), Params: FastParams}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.ln = ln
	e.URL = "http://" + ln.Addr().String()
	e.env = map[string]string{
		"DEVSPACE_STATE_DIR":       e.StateDir,
		"DEVSPACE_PROJECTS":        strings.Join(specs, ","),
		"DEVSPACE_PUBLIC_BASE_URL": e.URL,
		"DEVSPACE_LISTEN":          ln.Addr().String(),
		"DEVSPACE_CONTROL_LISTEN":  "127.0.0.1:0",
		"DEVSPACE_METRICS_LISTEN":  "127.0.0.1:0",
		"DEVSPACE_SCRATCH_DIR":     filepath.Join(base, "scratch"),
		"DEVSPACE_TOOLS_DIR":       filepath.Join(base, "tools"),
		"DEVSPACE_LOG_LEVEL":       "debug",
	}
	if _, set := opts.Env["DEVSPACE_CONTROL_LISTEN"]; !set {
		// Bound first too, so the App's configuration names the real
		// address (the doctor it runs for the console finds it there).
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.ctlLn, e.ControlAddr = ln, ln.Addr().String()
		e.env["DEVSPACE_CONTROL_LISTEN"] = e.ControlAddr
	}
	if _, set := opts.Env["DEVSPACE_ADMIN_LISTEN"]; !set {
		// Bound first, so the App knows the console's real address (its
		// sign-in links name it).
		cl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		e.conLn = cl
		e.env["DEVSPACE_ADMIN_LISTEN"] = cl.Addr().String()
	}
	for k, v := range opts.Env {
		e.env[k] = v
	}
	e.start()
	t.Cleanup(e.Stop)
	return e
}

// Attach returns an Env that drives the HTTP side of an instance running
// elsewhere at baseURL, such as a `devspace serve` process a harness
// started: Register, Authorize, Token, Revoke, Grant and GrantFor work on
// it. It has no App, state directory, roots or clock: Stop does nothing,
// and Restart must not be called.
func Attach(t testing.TB, baseURL string) *Env {
	return &Env{t: t, URL: strings.TrimSuffix(baseURL, "/"), Roots: map[string]string{}, env: map[string]string{}}
}

// SetSandboxProbe replaces the Landlock probe for the next Restart.
func (e *Env) SetSandboxProbe(p func() sandbox.Status) { e.opts.SandboxProbe = p }

// SetEnv changes a configuration variable for the next Restart.
func (e *Env) SetEnv(k, v string) { e.env[k] = v }

// LookupEnv is the instance's configuration environment.
func (e *Env) LookupEnv(k string) (string, bool) {
	v, ok := e.env[k]
	return v, ok
}

func (e *Env) start() {
	t := e.t
	cfg, err := config.Load(nil, e.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	e.Config = cfg
	var sink io.Writer = e.Logs
	if e.opts.DiscardLogs {
		sink = io.Discard
	}
	log := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := app.Options{Now: e.Clock.Now,
		AllowLoopbackMetadata: e.opts.AllowLoopbackMetadata, MetadataHTTPClient: e.opts.MetadataHTTPClient,
		SandboxProbe: e.opts.SandboxProbe, OnStatement: e.opts.OnStatement}
	a, err := app.New(context.Background(), cfg, log, opts)
	// A Restart in this process can find the state directory still
	// locked for a moment: a child that a parallel test forked (a command,
	// git) while Stop closed the lock file holds a copy of its descriptor,
	// and with it the flock, until it execs (O_CLOEXEC). A restarted
	// server is a new process and never sees this.
	for deadline := time.Now().Add(5 * time.Second); errors.Is(err, store.ErrLocked) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		a, err = app.New(context.Background(), cfg, log, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.App = a
	if e.ln == nil {
		// Restart: bind the same address again.
		ln, err := net.Listen("tcp", strings.TrimPrefix(e.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		e.ln = ln
	}
	e.srv = &httptest.Server{Listener: e.ln, Config: &http.Server{Handler: a.PublicHandler()}}
	e.srv.Start()
	a.StartBackground()
	switch {
	case e.ctlLn != nil:
		e.ctl = &httptest.Server{Listener: e.ctlLn, Config: &http.Server{Handler: a.ControlHandler()}}
		e.ctl.Start()
		e.ctlLn = nil
	case e.ControlAddr == "":
		e.ctl = httptest.NewServer(a.ControlHandler())
		e.ControlAddr = strings.TrimPrefix(e.ctl.URL, "http://")
	default:
		ln, err := net.Listen("tcp", e.ControlAddr)
		if err != nil {
			t.Fatal(err)
		}
		e.ctl = &httptest.Server{Listener: ln, Config: &http.Server{Handler: a.ControlHandler()}}
		e.ctl.Start()
	}
	e.env["DEVSPACE_CONTROL_LISTEN"] = e.ControlAddr
	if h := a.ConsoleHandler(); h != nil {
		if e.conLn == nil {
			ln, err := net.Listen("tcp", cfg.AdminListen)
			if err != nil {
				t.Fatal(err)
			}
			e.conLn = ln
		}
		e.con = &httptest.Server{Listener: e.conLn, Config: &http.Server{Handler: h}}
		e.con.Start()
		e.ConsoleURL = "http://" + e.conLn.Addr().String()
	}
}

// Stop shuts the instance down (idempotent).
func (e *Env) Stop() {
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
		e.ln = nil
	}
	if e.ctl != nil {
		e.ctl.Close()
		e.ctl = nil
	}
	if e.con != nil {
		e.con.Close()
		e.con = nil
		e.conLn = nil
	}
	if e.App != nil {
		e.App.Close()
		e.App = nil
	}
}

// StopServing closes the listeners and the App but keeps the state, as
// after the server process exited (the CLI then works offline).
func (e *Env) StopServing() { e.Stop() }

// Restart stops the instance and starts a new process-equivalent on the
// same state directory and address.
func (e *Env) Restart() {
	e.Stop()
	e.start()
}

// Client is a dynamically registered OAuth client.
type Client struct {
	ID, Secret  string
	RedirectURI string
	AuthMethod  string
}

// Register performs RFC 7591 registration.
func (e *Env) Register(name, redirectURI, authMethod string) Client {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": []string{redirectURI},
		"token_endpoint_auth_method": authMethod, "grant_types": []string{"authorization_code", "refresh_token"}})
	resp, err := http.Post(e.URL+"/oauth/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(data, &out) != nil {
		e.t.Fatalf("register: %s %s", resp.Status, data)
	}
	return Client{ID: out.ClientID, Secret: out.ClientSecret, RedirectURI: redirectURI, AuthMethod: authMethod}
}

// PKCE returns a verifier and its S256 challenge.
func PKCE() (verifier, challenge string) {
	verifier = strings.Repeat("v", 10) + fmt.Sprint(time.Now().UnixNano()) + "-pkce-verifier-0123456789abcdefghijkl"
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// NoRedirect is an HTTP client that never follows redirects.
var NoRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout: 30 * time.Second}

var (
	requestRE   = regexp.MustCompile(`name="request" value="([^"]+)"`)
	selectionRE = regexp.MustCompile(`name="selection" value="([^"]+)"`)
	projectRE   = regexp.MustCompile(`name="project" value="([^"]+)"[^>]*> ([^<\n]+)`)
)

// Consent is the outcome of driving the consent page.
type Consent struct {
	Status   int
	Location *url.URL // redirect target on approve/deny
	Body     string   // last page body
}

// Approval says what the owner picks on step 2.
type Approval struct {
	Password string   // default Password
	Projects []string // labels; default: the first project
	Scopes   []string // default: project:read
	Deny     bool
}

// Authorize drives GET /oauth/authorize and both consent steps over plain
// HTTP, returning the final redirect.
func (e *Env) Authorize(authURL string, a Approval) Consent {
	e.t.Helper()
	if a.Password == "" {
		a.Password = Password
	}
	resp, body := e.get(authURL)
	if resp.StatusCode != http.StatusOK {
		return consentResult(resp, body)
	}
	m := requestRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no request token on step 1:\n%s", body)
	}
	resp, body = e.postForm("/oauth/authorize", url.Values{"request": {html.UnescapeString(m[1])}, "password": {a.Password}})
	if resp.StatusCode != http.StatusOK {
		return consentResult(resp, body)
	}
	m = selectionRE.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no selection token on step 2:\n%s", body)
	}
	form := url.Values{"selection": {html.UnescapeString(m[1])}, "decision": {"approve"}}
	if a.Deny {
		form.Set("decision", "deny")
	}
	labels := a.Projects
	refs := map[string]string{}
	for _, pm := range projectRE.FindAllStringSubmatch(body, -1) {
		refs[strings.TrimSpace(html.UnescapeString(pm[2]))] = html.UnescapeString(pm[1])
		if labels == nil {
			labels = []string{strings.TrimSpace(html.UnescapeString(pm[2]))}
		}
	}
	for _, l := range labels {
		ref, ok := refs[l]
		if !ok {
			ref = l // allow tests to post raw refs
		}
		form.Add("project", ref)
	}
	scopes := a.Scopes
	if scopes == nil {
		scopes = []string{"project:read"}
	}
	for _, s := range scopes {
		form.Add("scope", s)
	}
	resp, body = e.postForm("/oauth/authorize", form)
	return consentResult(resp, body)
}

func consentResult(resp *http.Response, body string) Consent {
	c := Consent{Status: resp.StatusCode, Body: body}
	if loc := resp.Header.Get("Location"); loc != "" {
		c.Location, _ = url.Parse(loc)
	}
	return c
}

func (e *Env) get(u string) (*http.Response, string) {
	e.t.Helper()
	resp, err := NoRedirect.Get(u)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func (e *Env) postForm(path string, form url.Values) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.URL)
	resp, err := NoRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// AuthURL builds an authorization request URL.
func (e *Env) AuthURL(c Client, challenge, state, scope string, extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {c.RedirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state}}
	if scope != "" {
		q.Set("scope", scope)
	}
	for k, v := range extra {
		q[k] = v
	}
	return e.URL + "/oauth/authorize?" + q.Encode()
}

// TokenResponse is a token endpoint answer (success or error).
type TokenResponse struct {
	Status       int
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// Token posts form to /oauth/token authenticating as c with its method.
func (e *Env) Token(c Client, form url.Values) TokenResponse {
	return e.tokenLike("/oauth/token", c, form)
}

// Revoke posts to /oauth/revoke as c.
func (e *Env) Revoke(c Client, token string) int {
	return e.tokenLike("/oauth/revoke", c, url.Values{"token": {token}}).Status
}

func (e *Env) tokenLike(path string, c Client, form url.Values) TokenResponse {
	e.t.Helper()
	form = cloneValues(form)
	req, _ := http.NewRequest(http.MethodPost, e.URL+path, nil)
	switch c.AuthMethod {
	case "client_secret_basic":
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	case "client_secret_post":
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	default:
		form.Set("client_id", c.ID)
	}
	req.Body = io.NopCloser(strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := NoRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr TokenResponse
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &tr)
	tr.Status = resp.StatusCode
	return tr
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Grant runs the whole flow (register, consent, code exchange) and returns
// the client and its first tokens.
func (e *Env) Grant(a Approval) (Client, TokenResponse) {
	e.t.Helper()
	c := e.Register("Test Client", "http://127.0.0.1:9/callback", "client_secret_basic")
	return c, e.GrantFor(c, a)
}

// Code runs consent for an existing client and returns the authorization
// code it was redirected with and the PKCE verifier that redeems it
// (Exchange).
func (e *Env) Code(c Client, a Approval) (code, verifier string) {
	e.t.Helper()
	verifier, challenge := PKCE()
	scope := strings.Join(a.Scopes, " ")
	res := e.Authorize(e.AuthURL(c, challenge, "st", scope, nil), a)
	if res.Location == nil || res.Location.Query().Get("code") == "" {
		e.t.Fatalf("consent did not return a code: %d %s", res.Status, res.Body)
	}
	return res.Location.Query().Get("code"), verifier
}

// Exchange redeems an authorization code from Code for c's first tokens.
func (e *Env) Exchange(c Client, code, verifier string) TokenResponse {
	e.t.Helper()
	tr := e.Token(c, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {c.RedirectURI}, "code_verifier": {verifier}})
	if tr.Status != http.StatusOK {
		e.t.Fatalf("code exchange: %d %s %s", tr.Status, tr.Error, tr.Description)
	}
	return tr
}

// GrantFor runs consent and the code exchange for an existing client.
func (e *Env) GrantFor(c Client, a Approval) TokenResponse {
	e.t.Helper()
	code, verifier := e.Code(c, a)
	return e.Exchange(c, code, verifier)
}

// ErrNoCode is returned when a consent produced no code.
var ErrNoCode = errors.New("no code")

// Main is the TestMain of every package that starts an instance: the
// instance runs command supervisors by re-executing the test binary with
// the hidden supervisor subcommand, which must not run the tests again.
func Main(m *testing.M) {
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
