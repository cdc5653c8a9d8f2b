package cli_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/apptest"
)

// TestCLIAdminLink: `devspace admin` prints a one-time sign-in link of the
// running server's console that works once; with the console off or no
// server running it says what to do.
func TestCLIAdminLink(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	vars := envOf(env)
	code, out, stderr := run(t, vars, "admin")
	if code != 0 {
		t.Fatalf("admin: %d %s", code, stderr)
	}
	link := strings.TrimSpace(out)
	if !strings.HasPrefix(link, env.ConsoleURL+"/signin?token=") || strings.Count(out, "\n") != 1 {
		t.Fatalf("admin printed %q, want one link on %s", out, env.ConsoleURL)
	}
	if !strings.Contains(stderr, "2 minutes") {
		t.Errorf("no note on standard error: %q", stderr)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		resp, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("use %d of the link: %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	off := apptest.Start(t, apptest.Options{Env: map[string]string{"DEVSPACE_ADMIN_LISTEN": "off"}})
	if code, _, stderr := run(t, envOf(off), "admin"); code != 1 || !strings.Contains(stderr, "DEVSPACE_ADMIN_LISTEN=off") {
		t.Fatalf("console off: %d %s", code, stderr)
	}
	env.StopServing()
	if code, _, stderr := run(t, vars, "admin"); code != 1 || !strings.Contains(stderr, "no DevSpace server answers") {
		t.Fatalf("no server: %d %s", code, stderr)
	}
}
