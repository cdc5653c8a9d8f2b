package instructions

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestInstructionsNeverCarrySecrets: instruction files are delivered
// without the model asking, so one that is a link to a secret (or to
// repository metadata) must never be delivered, at the root or nested.
func TestInstructionsNeverCarrySecrets(t *testing.T) {
	const marker = "SECRET-MARKER-77aa"
	e := newEnv(t)
	e.write(t, ".env", "TOKEN="+marker+"\n")
	e.write(t, ".ssh/id_ed25519", marker+"\n")
	e.write(t, ".git/config", marker+"\n")
	e.write(t, "docs/AGENTS.md", "real nested instructions\n")
	e.symlink(t, ".env", "AGENTS.md")
	e.symlink(t, "../.ssh/id_ed25519", "sub/AGENTS.md")
	e.symlink(t, "../.git/config", "meta/AGENTS.md")
	e.symlink(t, "../docs/AGENTS.md", "ok/AGENTS.md") // a link to a harmless file still counts
	f, _ := e.finder(t, Options{})
	ctx := context.Background()
	set, err := f.Root(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out := fmt.Sprintf("%+v", set); strings.Contains(out, marker) {
		t.Errorf("root instructions carry a secret: %s", out)
	}
	for _, p := range []string{"sub/x.go", "meta/x", "sub", "ok/x"} {
		got, err := f.ForPath(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if out := fmt.Sprintf("%+v", got); strings.Contains(out, marker) {
			t.Errorf("ForPath(%q) carries a secret: %s", p, out)
		}
		if p == "ok/x" && (len(got) != 1 || !strings.Contains(got[0].Content, "real nested")) {
			t.Errorf("ForPath(%q) = %+v, want the linked instructions", p, got)
		}
	}
}
