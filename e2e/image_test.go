//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestImageAnyUIDGID builds the image for the IDs owners pass with the
// README's advice (`id -u`/`id -g`): an existing group (GID 0, macOS'
// GID 20 "dialout" here) or user (UID 33, www-data) is reused, a new one
// created; the server then runs as exactly that UID and GID. Only the
// user layer and after are rebuilt: the rest comes from the cache.
func TestImageAnyUIDGID(t *testing.T) {
	base := os.Getenv("DEVSPACE_E2E_BASE")
	if base == "" {
		t.Fatal("DEVSPACE_E2E_BASE is not set; run the e2e tests with `make e2e`")
	}
	// 10001:10001 is the default: the image under test, not built again.
	for _, ids := range []struct{ uid, gid string }{{"10001", "10001"}, {"10001", "0"}, {"10001", "20"}, {"33", "33"}} {
		t.Run("uid"+ids.uid+"_gid"+ids.gid, func(t *testing.T) {
			tag := image
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if ids.uid != "10001" || ids.gid != "10001" {
				tag = fmt.Sprintf("devspace:e2e-ids-%s-%s", ids.uid, ids.gid)
				build := exec.CommandContext(ctx, "docker", "build", "-q", "--target", "runtime-prebuilt",
					"--build-arg", "RUNTIME_IMAGE="+base, "--build-arg", "DEVSPACE_UID="+ids.uid, "--build-arg", "DEVSPACE_GID="+ids.gid,
					"-t", tag, repoRoot)
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("docker build: %v\n%s", err, out)
				}
				defer exec.Command("docker", "image", "rm", "-f", tag).Run()
			}
			// Hardened as compose.yaml runs it: read-only root, home on a
			// tmpfs owned by the IDs, /data a volume.
			run := exec.CommandContext(ctx, "docker", "run", "--rm", "--read-only", "--cap-drop", "ALL",
				"--security-opt", "no-new-privileges",
				"--tmpfs", fmt.Sprintf("/home/devspace:size=16m,mode=0700,uid=%s,gid=%s", ids.uid, ids.gid),
				"--entrypoint", "sh", tag, "-c",
				`id -u; id -g; test -w "$HOME" && echo home-writable; test -w /data && echo data-writable; devspace version >/dev/null && echo runs`)
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("docker run: %v\n%s", err, out)
			}
			want := ids.uid + "\n" + ids.gid + "\nhome-writable\ndata-writable\nruns\n"
			if string(out) != want {
				t.Fatalf("in the container:\n%s\nwant:\n%s", out, want)
			}
		})
	}
	t.Run("uid0 refused", func(t *testing.T) {
		build := exec.Command("docker", "build", "-q", "--target", "runtime-prebuilt",
			"--build-arg", "RUNTIME_IMAGE="+base, "--build-arg", "DEVSPACE_UID=0", "-t", "devspace:e2e-ids-root", repoRoot)
		out, err := build.CombinedOutput()
		exec.Command("docker", "image", "rm", "-f", "devspace:e2e-ids-root").Run()
		if err == nil || !strings.Contains(string(out), "DEVSPACE_UID must not be 0") {
			t.Fatalf("building for UID 0: %v\n%s", err, out)
		}
	})
}

// TestImageExtraPackages (issue 34): an image built with
// DEVSPACE_EXTRA_PACKAGES="nodejs npm" (as compose.yaml passes it from
// .env) runs `node --version` from a command; the image without it
// answers command not found; a name apt does not know fails the build
// with apt's message.
func TestImageExtraPackages(t *testing.T) {
	base := os.Getenv("DEVSPACE_E2E_BASE")
	if base == "" {
		t.Fatal("DEVSPACE_E2E_BASE is not set; run the e2e tests with `make e2e`")
	}
	build := func(t *testing.T, tag, packages string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "docker", "build", "-q", "--target", "runtime-prebuilt",
			"--build-arg", "RUNTIME_IMAGE="+base, "--build-arg", "DEVSPACE_EXTRA_PACKAGES="+packages, "-t", tag, repoRoot).CombinedOutput()
		return string(out), err
	}
	t.Run("a name apt does not know", func(t *testing.T) {
		out, err := build(t, "devspace:e2e-extra-bad", "nodejs devspace-no-such-package")
		if err == nil {
			exec.Command("docker", "image", "rm", "-f", "devspace:e2e-extra-bad").Run()
			t.Fatalf("the build passed:\n%s", out)
		}
		if !strings.Contains(out, "Unable to locate package devspace-no-such-package") {
			t.Errorf("the build failed without apt's message:\n%s", tail(out, 20))
		}
	})
	const tag = "devspace:e2e-extra"
	if out, err := build(t, tag, "nodejs npm"); err != nil {
		t.Fatalf("docker build with nodejs npm: %v\n%s", err, tail(out, 30))
	}
	defer exec.Command("docker", "image", "rm", "-f", tag).Run()
	for _, tc := range []struct {
		name, image string
		wantExit    float64
		want        string
	}{
		{"with nodejs", tag, 0, "v"},
		{"the base image (control)", image, 127, "command not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := startInstanceOf(t, tc.image)
			c := in.pub.register(t, "Extra packages")
			tok := in.pub.grant(t, c, []string{"alpha"}, allScopes)
			cn := in.pub.connect(t, tok.AccessToken, "extra")
			cn.open("open", "")
			out := cn.shell("node", "node --version", nil)
			if s, _ := out["output"].(string); out["exitCode"] != tc.wantExit || !strings.Contains(s, tc.want) {
				t.Errorf("node --version: %v, want exit %v and %q", out, tc.wantExit, tc.want)
			}
		})
	}
}
