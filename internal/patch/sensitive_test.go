package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/testutil"
)

// sensitiveTree holds .ssh/config and .aws/credentials-like files behind
// innocent-looking symlinks.
func sensitiveTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{
		".ssh/config":  {Content: "Host x\n"},
		".aws/config":  {Content: "[default]\n"},
		"src/main.txt": {Content: "main\n"},
	})
	for link, target := range map[string]string{
		"keys":       ".ssh",          // keys/config is .ssh/config
		"src/up":     "..",            // src/up/.ssh/config
		"chain":      "hop",           // chain → hop → .aws
		"hop":        ".aws",          //
		"plain.link": "src/main.txt",  // a final symlink: refused as such
		"nested":     "src/../.ssh/.", // a target with dots
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestApplyRefusesSensitiveTargetBehindSymlink(t *testing.T) {
	tests := []struct {
		name, patch string
	}{
		{"update through dir link", "*** Begin Patch\n*** Update File: keys/config\n@@\n-Host x\n+Host y\n*** End Patch"},
		{"add through dir link", "*** Begin Patch\n*** Add File: keys/authorized_keys\n+ssh-ed25519 AAAA\n*** End Patch"},
		{"add in a new dir through dir link", "*** Begin Patch\n*** Add File: keys/sub/new\n+x\n*** End Patch"},
		{"delete through dir link", "*** Begin Patch\n*** Delete File: keys/config\n*** End Patch"},
		{"link climbing up", "*** Begin Patch\n*** Update File: src/up/.ssh/config\n@@\n-Host x\n+Host y\n*** End Patch"},
		{"chain of links", "*** Begin Patch\n*** Update File: chain/config\n@@\n-[default]\n+[evil]\n*** End Patch"},
		{"dotted target", "*** Begin Patch\n*** Update File: nested/config\n@@\n-Host x\n+Host y\n*** End Patch"},
		{"move onto it", "*** Begin Patch\n*** Update File: src/main.txt\n*** Move to: keys/config\n*** End Patch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := sensitiveTree(t)
			before := testutil.Tree(t, dir)
			_, err := apply(t, dir, tt.patch, Options{})
			var pe *project.PathError
			if !errors.As(err, &pe) || pe.Reason != project.ReasonSensitive {
				t.Fatalf("Apply error = %v, want path denied (sensitive)", err)
			}
			diffSnapshots(t, before, testutil.Tree(t, dir))
		})
	}
	t.Run("allowed when asked", func(t *testing.T) {
		dir := sensitiveTree(t)
		if _, err := apply(t, dir, tests[0].patch, Options{AllowSensitive: true}); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, dir, ".ssh/config"); got != "Host y\n" {
			t.Errorf(".ssh/config = %q", got)
		}
	})
	t.Run("a link to an ordinary dir is fine", func(t *testing.T) {
		dir := sensitiveTree(t)
		if err := os.Symlink("src", filepath.Join(dir, "code")); err != nil {
			t.Fatal(err)
		}
		if _, err := apply(t, dir, "*** Begin Patch\n*** Update File: code/main.txt\n@@\n-main\n+MAIN\n*** End Patch", Options{}); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, dir, "src/main.txt"); got != "MAIN\n" {
			t.Errorf("src/main.txt = %q", got)
		}
	})
}

func TestRestoreRefusesSensitiveTargetBehindSymlink(t *testing.T) {
	dir := sensitiveTree(t)
	before := testutil.Tree(t, dir)
	_, err := Restore(context.Background(), openRoot(t, dir), []FileState{
		{Path: "keys/config", Expect: hashOf("Host x\n"), Content: []byte("Host evil\n"), Mode: 0o644},
	}, nil, Options{})
	var pe *project.PathError
	if !errors.As(err, &pe) || pe.Reason != project.ReasonSensitive {
		t.Fatalf("Restore error = %v, want path denied (sensitive)", err)
	}
	diffSnapshots(t, before, testutil.Tree(t, dir))
}

// secretMarker is in every sensitive file of secretsTree and secretsPatch.
const secretMarker = "SECRET_MARKER_15"

// secretsTree returns a directory with secrets next to one plain file;
// keys links to .ssh.
func secretsTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteTree(t, dir, map[string]testutil.File{
		".env":            {Content: "TOKEN=" + secretMarker + "-env\n", Mode: 0o600},
		".env.local":      {Content: "TOKEN=" + secretMarker + "-local\n", Mode: 0o600},
		".ssh/id_ed25519": {Content: secretMarker + "-key\n", Mode: 0o600},
		".ssh/config":     {Content: "Host " + secretMarker + "-ssh\n", Mode: 0o600},
		"plain.txt":       {Content: "visible\n"},
	})
	if err := os.Symlink(".ssh", filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// secretsPatch changes secretsTree's secrets every way a patch can (an
// update, an add, a delete, an update through the keys link, a move to a
// plain name) and its plain file.
const secretsPatch = `*** Begin Patch
*** Update File: .env
@@
-TOKEN=` + secretMarker + `-env
+TOKEN=` + secretMarker + `-new
*** Add File: config/prod.pem
+` + secretMarker + `-pem
*** Delete File: .ssh/id_ed25519
*** Update File: keys/config
@@
-Host ` + secretMarker + `-ssh
+Host ` + secretMarker + `-ssh2
*** Update File: .env.local
*** Move to: notes.txt
@@
-TOKEN=` + secretMarker + `-local
+TOKEN=` + secretMarker + `-moved
*** Update File: plain.txt
@@
-visible
+visible-changed
*** End Patch`
