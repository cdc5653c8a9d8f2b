package executions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/idempotency"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/store"
)

var key = []byte("binding-test-key-binding-test-key-32")

func newService(t *testing.T, st *store.Store, roots map[string]string) *Service {
	t.Helper()
	var specs []project.Spec
	for label, path := range roots {
		specs = append(specs, project.Spec{Label: label, Path: path})
	}
	return newServiceSpecs(t, st, specs)
}

func newServiceSpecs(t testing.TB, st *store.Store, specs []project.Spec) *Service {
	t.Helper()
	cat, err := project.NewCatalog(key, specs)
	if err != nil {
		t.Fatal(err)
	}
	// A commands service without a process manager: executions own no
	// commands here.
	return New(Options{Store: st, Catalog: cat, Operations: idempotency.New(st, idempotency.Options{}),
		Cursors: cursor.New(key, cursor.Options{}), FingerKey: key, Resources: nopResources{}})
}

func TestResolveRechecks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	alpha, beta := filepath.Join(dir, "alpha"), filepath.Join(dir, "beta")
	os.Mkdir(alpha, 0o755)
	os.Mkdir(beta, 0o755)
	os.WriteFile(filepath.Join(alpha, "AGENTS.md"), []byte(strings.Repeat("Keep the tests green at all times.\n", 1000)), 0o644)
	st, err := store.Open(ctx, filepath.Join(dir, "state"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := newService(t, st, map[string]string{"alpha": alpha, "beta": beta})
	alphaRef, betaRef := project.Ref(key, alpha), project.Ref(key, beta)
	c := Caller{GrantID: "g1", ClientID: "c1", Scopes: []string{"project:read"}, ProjectIDs: []string{alphaRef, betaRef},
		GrantEpoch: 1, GlobalEpoch: 1, SessionRef: "s1", ActorRef: "a1"}

	if _, err := svc.Resolve(ctx, c); !errors.Is(err, ErrExecutionRequired) {
		t.Fatalf("before open: %v", err)
	}
	if _, _, err := svc.Open(ctx, c, "", "op0", false); !errors.Is(err, ErrProjectRefRequired) {
		t.Fatalf("open without ref: %v", err)
	}
	opened, _, err := svc.Open(ctx, c, alphaRef, "op1", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resolve(ctx, c); !errors.Is(err, ErrInstructionsRequired) {
		t.Fatalf("with pages pending: %v", err)
	}
	for cur := opened.Instructions.NextCursor; cur != ""; {
		h, err := svc.Hydrate(ctx, c, cur)
		if err != nil {
			t.Fatal(err)
		}
		cur = h.Instructions.NextCursor
	}
	if _, err := svc.Resolve(ctx, c); err != nil {
		t.Fatalf("after all pages: %v", err)
	}
	stale := map[string]func(Caller) Caller{
		"narrowed scopes":   func(c Caller) Caller { c.Scopes = []string{}; return c },
		"grant epoch":       func(c Caller) Caller { c.GrantEpoch = 2; return c },
		"global epoch":      func(c Caller) Caller { c.GlobalEpoch = 2; return c },
		"project ungranted": func(c Caller) Caller { c.ProjectIDs = []string{betaRef}; return c },
		"other client":      func(c Caller) Caller { c.ClientID = "c2"; return c },
		"other session":     func(c Caller) Caller { c.SessionRef = "s2"; return c },
		"other actor":       func(c Caller) Caller { c.ActorRef = "a2"; return c },
		"other grant":       func(c Caller) Caller { c.GrantID = "g2"; return c },
	}
	for name, mutate := range stale {
		if _, err := svc.Resolve(ctx, mutate(c)); !errors.Is(err, ErrExecutionRequired) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Root replaced by another directory at the same path.
	os.Rename(alpha, filepath.Join(dir, "alpha-old"))
	os.Mkdir(alpha, 0o755)
	if _, err := svc.Resolve(ctx, c); !errors.Is(err, ErrExecutionRequired) {
		t.Fatalf("replaced root: %v", err)
	}
	// Beta, then beta removed from the configuration: closed at startup.
	if _, _, err := svc.Open(ctx, c, betaRef, "op2", false); err != nil {
		t.Fatal(err)
	}
	svc2 := newService(t, st, map[string]string{"alpha": alpha})
	if err := svc2.CloseRemovedProjects(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := newService(t, st, map[string]string{"alpha": alpha, "beta": beta}).Resolve(ctx, c); !errors.Is(err, ErrExecutionRequired) {
		t.Fatalf("execution of a removed project still resolves: %v", err)
	}
	// Revocation closes the grant's executions.
	if _, _, err := svc.Open(ctx, c, betaRef, "op3", false); err != nil {
		t.Fatal(err)
	}
	if err := svc.CloseGrants(ctx, []string{"g1"}, "grant_revoked"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resolve(ctx, c); !errors.Is(err, ErrExecutionRequired) {
		t.Fatalf("after revocation: %v", err)
	}
}

// nopResources owns nothing: these tests start no command.
type nopResources struct{}

func (nopResources) CloseExecutions(context.Context, []string, string) {}
func (nopResources) Interrupt(context.Context, string) (int, error)    { return 0, nil }
func (nopResources) Running(string) int                                { return 0 }
