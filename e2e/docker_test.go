//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// appUID is the user the image runs as.
const appUID = 10001

// instance is a DevSpace container started with the hardening of
// compose.yaml, two Projects (alpha, beta) bind-mounted from the host and
// its state directory bind-mounted too.
type instance struct {
	ctr     *testcontainers.DockerContainer
	net     *testcontainers.DockerNetwork
	roots   map[string]string // label → host directory
	dataDir string
	pub     *endpoint
	metrics string // http://127.0.0.1:<port> of the metrics listener
}

// hostDirs creates directories owned by the image's user.
func hostDirs(t *testing.T, names ...string) map[string]string {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, n := range names {
		d := filepath.Join(base, n)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, appUID, appUID); err != nil {
			t.Fatal(err)
		}
		dirs[n] = d
	}
	return dirs
}

// writeFile writes a file the image's user may read and change.
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, appUID, appUID); err != nil {
		t.Fatal(err)
	}
}

// capBnd is the bounding set every process of the container has:
// CAP_SYS_PTRACE alone (compose.yaml's cap_add), never effective or
// permitted for the server's user, and no_new_privs keeps it from being
// gained.
const capBnd = "0000000000080000"

// hardened applies compose.yaml's hardening and the given bind mounts.
func hardened(binds ...string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.ReadonlyRootfs = true
		hc.CapDrop = []string{"ALL"}
		// Listed only so that Docker's default seccomp profile allows
		// pidfd_getfd (the Unix gate); no process holds it (capBnd).
		hc.CapAdd = []string{"SYS_PTRACE"}
		hc.SecurityOpt = []string{"no-new-privileges:true"}
		hc.Tmpfs = map[string]string{
			"/tmp":           "size=256m,mode=1777",
			"/home/devspace": fmt.Sprintf("size=64m,mode=0700,uid=%d,gid=%d", appUID, appUID),
		}
		hc.Binds = append(hc.Binds, binds...)
		pids := int64(1024)
		hc.PidsLimit = &pids
		hc.Memory = 2 << 30
	})
}

// startInstance initializes state with a one-off `devspace init` container,
// then starts `devspace serve` on a network of its own with the alias
// "devspace".
func startInstance(t *testing.T) *instance { t.Helper(); return startInstanceOf(t, image) }

// startInstanceOf is startInstance with the image img.
func startInstanceOf(t *testing.T, img string) *instance {
	t.Helper()
	ctx := context.Background()
	dirs := hostDirs(t, "alpha", "beta", "data", "secrets")
	if err := os.Chmod(dirs["data"], 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dirs["secrets"], "owner"), ownerPassword+"\n", 0o400)
	binds := []string{
		dirs["data"] + ":/data",
		dirs["alpha"] + ":/projects/alpha",
		dirs["beta"] + ":/projects/beta",
		dirs["secrets"] + ":/run/secrets:ro",
	}
	env := map[string]string{
		"DEVSPACE_PROJECTS":            "alpha=/projects/alpha,beta=/projects/beta",
		"DEVSPACE_OAUTH_SCOPES":        strings.Join(allScopes, " "),
		"DEVSPACE_OWNER_PASSWORD_FILE": "/run/secrets/owner",
		"DEVSPACE_LOG_LEVEL":           "debug",
	}

	// `devspace init` (as `docker compose run --rm devspace init` does).
	init, err := testcontainers.Run(ctx, img, testcontainers.WithCmd("init"), testcontainers.WithEnv(env),
		hardened(binds...), testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(60*time.Second)))
	if init != nil {
		defer init.Terminate(ctx)
	}
	if err != nil {
		t.Fatalf("devspace init: %v", err)
	}
	if st, err := init.State(ctx); err != nil || st.ExitCode != 0 {
		t.Fatalf("devspace init exited %v: %v\n%s", st, err, logs(init))
	}

	nw, err := network.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Remove(context.Background()) })
	ctr, err := testcontainers.Run(ctx, img,
		testcontainers.WithEnv(env), hardened(binds...),
		testcontainers.WithExposedPorts("7676/tcp", "7678/tcp"),
		network.WithNetwork([]string{"devspace"}, nw),
		testcontainers.WithWaitStrategy(wait.ForExec([]string{"devspace", "healthcheck"}).
			WithPollInterval(200*time.Millisecond).WithStartupTimeout(60*time.Second)),
	)
	if ctr != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("devspace logs:\n%s", tail(logs(ctr), 60))
			}
			ctr.Terminate(context.Background())
		})
	}
	if err != nil {
		t.Fatalf("start devspace: %v", err)
	}
	pub, err := ctr.MappedPort(ctx, "7676/tcp")
	if err != nil {
		t.Fatal(err)
	}
	met, err := ctr.MappedPort(ctx, "7678/tcp")
	if err != nil {
		t.Fatal(err)
	}
	// The server's public URL is the image default http://127.0.0.1:7676:
	// requests are addressed to it and dialled to the published port.
	const public = "http://127.0.0.1:7676"
	return &instance{ctr: ctr, net: nw, dataDir: dirs["data"],
		roots:   map[string]string{"alpha": dirs["alpha"], "beta": dirs["beta"]},
		pub:     newEndpoint(public, public, "127.0.0.1:7676", "127.0.0.1:"+pub.Port()),
		metrics: "http://127.0.0.1:" + met.Port()}
}

// exec runs a command in the container as its user and returns the exit
// code and the combined output.
func (in *instance) exec(t testing.TB, cmd ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, r, err := in.ctr.Exec(ctx, cmd, tcexec.Multiplexed())
	if err != nil {
		t.Fatalf("docker exec %v: %v", cmd, err)
	}
	out, _ := io.ReadAll(r)
	return code, string(out)
}

// procScript prints one line per process in the container: pid, state and
// the command line with NULs and newlines as spaces. It takes no argument, so its own
// command line never carries a marker.
const procScript = `for d in /proc/[0-9]*; do
  s=$(cat "$d/stat" 2>/dev/null) || continue
  c=$(tr '\0\n' '  ' < "$d/cmdline" 2>/dev/null)
  s=${s##*) }
  echo "${d#/proc/} ${s%% *} $c"
done`

// processes scans /proc in the container.
func (in *instance) processes(t testing.TB) []string {
	t.Helper()
	code, out := in.exec(t, "bash", "-c", procScript)
	if code != 0 {
		t.Fatalf("proc scan: %d %s", code, out)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// withMarker returns the processes whose command line carries marker.
func (in *instance) withMarker(t testing.TB, marker string) []string {
	t.Helper()
	var hits []string
	for _, p := range in.processes(t) {
		if strings.Contains(p, marker) {
			hits = append(hits, p)
		}
	}
	return hits
}

// zombies returns the processes in state Z.
func (in *instance) zombies(t testing.TB) []string {
	t.Helper()
	var z []string
	for _, p := range in.processes(t) {
		if f := strings.Fields(p); len(f) > 1 && f[1] == "Z" {
			z = append(z, p)
		}
	}
	return z
}

// waitAlive waits until at least n processes carry marker.
func (in *instance) waitAlive(t testing.TB, marker string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(in.withMarker(t, marker)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("want %d processes with %s, have %v", n, marker, in.withMarker(t, marker))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitGone waits until no process in the container carries marker.
func (in *instance) waitGone(t testing.TB, marker string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := in.withMarker(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with %s survive:\n%s", marker, strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// devspace runs the devspace CLI in the container (`docker exec … devspace`).
func (in *instance) devspace(t testing.TB, args ...string) string {
	t.Helper()
	code, out := in.exec(t, append([]string{"devspace"}, args...)...)
	if code != 0 {
		t.Fatalf("devspace %v: exit %d\n%s", args, code, out)
	}
	return out
}

func logs(c *testcontainers.DockerContainer) string {
	r, err := c.Logs(context.Background())
	if err != nil {
		return err.Error()
	}
	defer r.Close()
	var b bytes.Buffer
	io.Copy(&b, r)
	return b.String()
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func marker(name string) string { return "e2e-" + name + "-" + strings.ToLower(randomString(8)) }

// containerConfig is the Docker container configuration testcontainers
// customizes.
type containerConfig = container.Config

// healthNone disables the image's HEALTHCHECK for helper containers that
// run the image with another entrypoint.
var healthNone = container.HealthConfig{Test: []string{"NONE"}}
