package cli_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/store"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestOwnerCLIOnFullDisk (issue 31, item 3): the Owner's CLI, through the
// running server's control API, on a state filesystem filled from
// outside. A revoke commits with the store's reserve. With the reserve
// used up too, a password rotation still holds in the server (the new
// password in force, every token refused), the CLI says it is not
// recorded, and the server records it once space comes back; the
// reserve is then restored.
func TestOwnerCLIOnFullDisk(t *testing.T) {
	base := testutil.SmallFS(t, 96<<20)
	env := apptest.Start(t, apptest.Options{Dir: base, Env: map[string]string{"DEVSPACE_DISK_RESERVE": "16MiB"}})
	vars := envOf(env)
	vars["DEVSPACE_DISK_RESERVE"] = "16MiB"
	c := env.Register("Full Disk Client", "http://127.0.0.1:9/cb", "client_secret_basic")
	first, second := env.GrantFor(c, apptest.Approval{}), env.GrantFor(c, apptest.Approval{})
	p, err := env.App.OAuth().Verify(t.Context(), first.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	reserve := filepath.Join(env.StateDir, store.ReserveFile)
	if _, err := os.Stat(reserve); err != nil {
		t.Fatalf("no reserve at start: %v", err)
	}

	outside := filepath.Join(base, "filled-from-outside")
	testutil.FillFS(t, outside)
	// /readyz says why (its database probe is a write, which fails too),
	// and so does doctor.
	if ready := readyz(t, env); ready.Checks["disk_space"] || !ready.Checks["keys"] {
		t.Errorf("readyz on a full disk: %+v", ready)
	}
	if _, out, _ := run(t, vars, "doctor"); !strings.Contains(out, "! state filesystem: 0 MiB free of 96 MiB, under a quarter of the 16 MiB reserve") {
		t.Errorf("doctor on a full disk:\n%s", out)
	}
	code, out, stderr := run(t, vars, "grants", "revoke", p.GrantID)
	if code != 0 || !strings.Contains(out, "revoked") || strings.Contains(stderr, "warning") {
		t.Fatalf("grants revoke on a full disk: %d %q %q", code, out, stderr)
	}
	if st := mcpStatus(t, env, first.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("revoked grant's token: %d", st)
	}
	if _, err := os.Stat(reserve); err == nil {
		t.Fatal("the revoke was recorded without the reserve: the disk was not full")
	}

	// The reserve is gone; fill what it freed.
	testutil.FillFS(t, outside+"-2")
	code, out, stderr = run(t, vars, "owner", "rotate-password")
	if code != 0 || !strings.Contains(out, "Owner password changed") || !strings.Contains(stderr, "could not record it") {
		t.Fatalf("rotate-password on a full disk: %d %q %q", code, out, stderr)
	}
	_, pw, ok := strings.Cut(out, "(shown once):")
	if pw = strings.TrimSpace(pw); !ok || pw == "" {
		t.Fatalf("no new password in %q", out)
	}
	if st := mcpStatus(t, env, second.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("a token after the rotation: %d", st)
	}
	if onDisk(t, env, pw) {
		t.Fatal("auth.json holds the new password although the disk was full")
	}

	// Space comes back: the server records both, and restores the reserve.
	for _, f := range []string{outside, outside + "-2"} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for !onDisk(t, env, pw) {
		if time.Now().After(deadline) {
			t.Fatal("the new password was never written")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if fi, err := os.Stat(reserve); err == nil && fi.Size() >= store.ReserveSize {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reserve was not restored")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The new password approves a new grant; the epoch bump was recorded
	// (the old tokens stay dead after a restart).
	env.Restart()
	if st := mcpStatus(t, env, second.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("a token from before the rotation after a restart: %d", st)
	}
	if tok := env.GrantFor(c, apptest.Approval{Password: pw}); mcpStatus(t, env, tok.AccessToken) != http.StatusOK {
		t.Fatal("the new password did not approve a grant")
	}
}

type readiness struct {
	Ready  bool            `json:"ready"`
	Checks map[string]bool `json:"checks"`
}

func readyz(t *testing.T, env *apptest.Env) readiness {
	t.Helper()
	resp, err := http.Get(env.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// onDisk reports whether auth.json verifies pw.
func onDisk(t *testing.T, env *apptest.Env, pw string) bool {
	t.Helper()
	s, err := authstate.Load(env.StateDir, "")
	if err != nil {
		return false
	}
	ok, err := s.VerifyPassword(t.Context(), []byte(pw))
	return err == nil && ok
}
