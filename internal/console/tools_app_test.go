package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestClearToolsFromConsole: the Projects page shows the size of a
// Project's tool home that a real command filled, and clearing it from
// the page (behind its confirmation box) empties it for the next command,
// through the path `devspace projects clear-tools` takes, audited as
// tools_cleared by the owner.
func TestClearToolsFromConsole(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	g := openGrant(t, env, "toolsmith")
	if sc := g.shell(`mkdir -p "$HOME/bin" && head -c 3145728 /dev/zero > "$HOME/bin/tool" && echo planted`); !strings.Contains(sc["output"].(string), "planted") {
		t.Fatalf("plant: %v", sc)
	}

	cl, base := signedIn(t, env)
	page := func() string { return getPage(t, cl, base+"/projects") }
	before := page()
	if !regexp.MustCompile(`<dt>Tool home</dt><dd>3\.\d MiB`).MatchString(before) {
		t.Fatalf("the Projects page does not show the 3 MiB tool home:\n%s", before)
	}
	const label = "alpha" // the Project the grant opened (its first)
	post := func(form url.Values) string {
		t.Helper()
		form.Set("csrf", csrfOf(t, page()))
		form.Set("project", label)
		resp, err := cl.PostForm(base+"/projects/clear-tools", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("clear-tools answered %d", resp.StatusCode)
		}
		u, _ := url.Parse(resp.Header.Get("Location"))
		return u.Query().Get("done")
	}

	if msg := post(url.Values{}); msg != "tools-unconfirmed" {
		t.Fatalf("without the box: %q", msg)
	}
	if sc := g.shell(`test -f "$HOME/bin/tool" && echo kept`); !strings.Contains(sc["output"].(string), "kept") {
		t.Fatalf("an unconfirmed clear removed the tool: %v", sc)
	}
	if msg := post(url.Values{"confirm": {"yes"}}); msg != "tools-cleared" {
		t.Fatalf("confirmed clear: %q", msg)
	}
	if after := getPage(t, cl, base+"/projects?done=tools-cleared"); !strings.Contains(after, "<dt>Tool home</dt><dd>0 B") || !strings.Contains(after, "Tool home cleared") {
		t.Errorf("the page after the clear:\n%s", after)
	}
	if sc := g.shell(`test -e "$HOME/bin/tool" && echo still || echo gone`); !strings.Contains(sc["output"].(string), "gone") {
		t.Fatalf("the tool survived the clear: %v", sc)
	}
	events, err := env.App.AuditEvents(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events {
		found = found || e.Kind == "tools_cleared" && strings.Contains(e.Detail, `"by":"owner"`) && strings.Contains(e.Detail, `"project":"`+label+`"`)
	}
	if !found {
		t.Errorf("no tools_cleared audit event by the owner in %+v", events)
	}
}

// TestOrphanToolsFromConsole: the Projects page tells of a tool home no
// configured Project has and removes it behind its confirmation box, and
// the tool home of a Project in use stays.
func TestOrphanToolsFromConsole(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	g := openGrant(t, env, "toolsmith")
	if sc := g.shell(`mkdir -p "$HOME/bin" && echo tool > "$HOME/bin/tool" && echo planted`); !strings.Contains(sc["output"].(string), "planted") {
		t.Fatalf("plant: %v", sc)
	}
	tools, _ := env.LookupEnv("DEVSPACE_TOOLS_DIR")
	orphan := filepath.Join(tools, "t-00112233445566778899aabb")
	if err := os.MkdirAll(orphan, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan, "cache"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}

	cl, base := signedIn(t, env)
	page := getPage(t, cl, base+"/projects")
	if !strings.Contains(page, "1 tool home(s) hold 1.0 MiB") {
		t.Fatalf("the Projects page does not tell of the orphan:\n%s", page)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "confirm": {"yes"}}
	resp, err := cl.PostForm(base+"/projects/clear-orphan-tools", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(resp.Header.Get("Location"))
	if msg := u.Query().Get("done"); msg != "orphans-removed" {
		t.Fatalf("remove: %d %q", resp.StatusCode, msg)
	}
	if _, err := os.Lstat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
	if sc := g.shell(`cat "$HOME/bin/tool"`); sc["output"] != "tool\n" {
		t.Errorf("the Project's own tool home lost its tool: %v", sc)
	}
	if page := getPage(t, cl, base+"/projects"); strings.Contains(page, "no configured Project") {
		t.Errorf("the orphans' section is still shown")
	}
}

// signedIn is a client of env's console signed in with a one-time link
// (it does not follow redirects), and the address its session's pages are
// under.
func signedIn(t *testing.T, env *apptest.Env) (*http.Client, string) {
	t.Helper()
	cl := &http.Client{Jar: newJar(t), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(link(t, env))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	place := resp.Header.Get("Location")
	if !strings.HasPrefix(place, "/s/") {
		t.Fatalf("sign-in led to %q", place)
	}
	return cl, env.ConsoleURL + strings.TrimSuffix(place, "/")
}

// getPage returns the body of a GET of u.
func getPage(t *testing.T, cl *http.Client, u string) string {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestHealthDoctorFindsItsServer: the doctor on the Health page is asked
// by the running server, so it finds that server on its control listener
// (bound to a port 0 here) and says it serves this state.
func TestHealthDoctorFindsItsServer(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	cl, base := signedIn(t, env)
	page := getPage(t, cl, base+"/health")
	if !strings.Contains(page, "a DevSpace server answers on 127.0.0.1:") || strings.Contains(page, "no server answers") {
		t.Errorf("the Health page's doctor does not find its own server:\n%s", page)
	}
}

// TestAttackOrphanHeldByReadOnlyCommand: a readOnly command runs its
// Project's tools from the tool home (read and execute) as a write
// command does. When the Project's root is replaced under it (a fresh
// clone), its tool home is no configured Project's, but a live command
// still holds it: removing the orphans keeps it.
func TestAttackOrphanHeldByReadOnlyCommand(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes, Projects: []string{"alpha"}})
	g := openGrant(t, env, "reader")
	if sc := g.shell(`mkdir -p "$HOME/bin" && printf '#!/bin/sh\necho ran\n' > "$HOME/bin/tool" && chmod +x "$HOME/bin/tool" && echo planted`); !strings.Contains(sc["output"].(string), "planted") {
		t.Fatalf("plant: %v", sc)
	}
	tools, _ := env.LookupEnv("DEVSPACE_TOOLS_DIR")
	homes, _ := filepath.Glob(filepath.Join(tools, "t-*"))
	if len(homes) != 1 {
		t.Fatalf("tool homes: %v", homes)
	}
	sc, _ := g.call("exec_command", map[string]any{"operationId": "reader", "shell": true, "sandbox": "readOnly",
		"command": "sleep 60; tool"})
	if sc["status"] != "running" {
		t.Fatalf("the readOnly command is not running: %v", sc)
	}
	// A fresh clone replaces the root: its tool home is keyed anew.
	root := env.Roots["alpha"]
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}

	cl, base := signedIn(t, env)
	page := getPage(t, cl, base+"/projects")
	form := url.Values{"csrf": {csrfOf(t, page)}, "confirm": {"yes"}}
	resp, err := cl.PostForm(base+"/projects/clear-orphan-tools", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(homes[0], "bin", "tool")); err != nil {
		t.Errorf("the tool home a live readOnly command runs its tools from was removed: %v", err)
	}
}
