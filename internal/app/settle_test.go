package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/app"
	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/authstate"
	"github.com/devspace-dev/devspace/internal/config"
	"github.com/devspace-dev/devspace/internal/testutil"
	"github.com/devspace-dev/devspace/internal/worktree"
)

// TestStartPrunesAfterListening: a served App prunes what a crash left
// half-created in a Git Project after its listeners are bound, and one shut
// down before that moment closes at once (nothing waits for a prune that
// never began).
func TestStartPrunesAfterListening(t *testing.T) {
	dir := t.TempDir()
	proj := testutil.NewRepo(t)
	testutil.Git(t, proj, "commit", "-q", "--allow-empty", "-m", "init")
	vars := map[string]string{"DEVSPACE_STATE_DIR": filepath.Join(dir, "state"), "DEVSPACE_PROJECTS": proj,
		"DEVSPACE_LISTEN": "127.0.0.1:0", "DEVSPACE_CONTROL_LISTEN": "127.0.0.1:0", "DEVSPACE_METRICS_LISTEN": "127.0.0.1:0",
		"DEVSPACE_ADMIN_LISTEN": "127.0.0.1:0", "HOME": t.TempDir()}
	cfg, err := config.Load(nil, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	// What `devspace init` (internal/cli) creates; New creates the database.
	if _, err := authstate.Init(cfg.StateDir, authstate.InitOptions{Password: []byte(apptest.Password), Params: apptest.FastParams}); err != nil {
		t.Fatal(err)
	}
	m, err := worktree.New(worktree.Options{Dir: filepath.Join(cfg.StateDir, "worktrees")})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := m.Create(t.Context(), proj, "exec1")
	if err != nil {
		t.Fatal(err)
	}
	// A crash right after `mkdir` leaves an empty directory.
	half := filepath.Join(filepath.Dir(wt.Path), "exec2")
	if err := os.Mkdir(half, 0o700); err != nil {
		t.Fatal(err)
	}

	// Shut down before the background work began: nothing is pruned and
	// nothing waits for a prune that never began.
	a, err := app.New(context.Background(), cfg, slogTo(os.Stderr), app.Options{Settle: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Shutdown(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown hangs when it comes before the background work")
	}
	if _, err := os.Stat(half); err != nil {
		t.Fatalf("pruned by a server shut down before its background work: %v", err)
	}

	// Not pruned before the listeners are bound; pruned after.
	a, err = app.New(context.Background(), cfg, slogTo(os.Stderr), app.Options{Settle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	if _, err := os.Stat(half); err != nil {
		t.Fatalf("pruned before the server listened: %v", err)
	}
	// The prune runs confined Git and competes with the pool's warm-up:
	// on a loaded machine it took over 10 s. It is bounded by
	// StartupPruneTimeout.
	for deadline := time.Now().Add(worktree.StartupPruneTimeout + 10*time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(half); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the half-created worktree was never pruned")
		}
	}
	if _, err := os.Stat(wt.Path); err != nil {
		t.Fatalf("the finished worktree was removed: %v", err)
	}
}
