//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stack is a compose project made of the repository's compose files, or,
// with dir set, the compose project an owner has in dir (compose.yaml and
// .env there, found by docker compose itself).
type stack struct {
	t     *testing.T
	name  string
	files []string
	env   []string
	dir   string
}

// run runs `docker compose <args>` for the stack and returns its combined
// output.
func (s *stack) run(args ...string) (string, error) {
	s.t.Helper()
	full := []string{"--project-name", s.name}
	env := append(os.Environ(), s.env...)
	if s.dir == "" {
		envFile := filepath.Join(s.t.TempDir(), "empty.env") // never a developer's .env
		if err := os.WriteFile(envFile, nil, 0o600); err != nil {
			s.t.Fatal(err)
		}
		full = append(full, "--project-directory", repoRoot, "--env-file", envFile)
		for _, f := range s.files {
			full = append(full, "-f", filepath.Join(repoRoot, f))
		}
	} else {
		// The owner's shell sets none of .env's variables (they would win
		// over the file).
		env = nil
		for _, kv := range append(os.Environ(), s.env...) {
			if !strings.HasPrefix(kv, "DEVSPACE_") && !strings.HasPrefix(kv, "TUNNEL_") && !strings.HasPrefix(kv, "CLOUDFLARED_") &&
				!strings.HasPrefix(kv, "COMPOSE_") {
				env = append(env, kv)
			}
		}
	}
	cmd := exec.Command(composeBin, append(full, args...)...)
	cmd.Dir, cmd.Env = s.dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (s *stack) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// probeScript prints, for each host:port argument, whether a TCP
// connection opens, is refused, or the name does not resolve.
const probeScript = `import socket, sys
for t in sys.argv[1:]:
    h, p = t.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=3).close()
        r = "open"
    except ConnectionRefusedError:
        r = "refused"
    except socket.gaierror:
        r = "unresolved"
    except OSError:
        r = "unreachable"
    print(t, r)
`

// TestCompose exercises compose.yaml itself, with the quick-tunnel
// override, and cloudflared replaced by a stand-in (deploy/e2e): the README's
// first run (`run --rm devspace init`, `up`), DEVSPACE_PUBLIC_BASE_URL=auto,
// the OAuth flow and MCP through the "tunnel", the owner CLI through
// `exec`, and which listener each network reaches.
func TestCompose(t *testing.T) {
	dirs := hostDirs(t, "alpha", "beta", "secrets")
	writeFile(t, filepath.Join(dirs["alpha"], "README.md"), "# alpha\n", 0o644)
	writeFile(t, filepath.Join(dirs["beta"], "README.md"), "# beta\nsecret-of-beta\n", 0o644)
	pw := filepath.Join(dirs["secrets"], "owner")
	writeFile(t, pw, ownerPassword+"\n", 0o400)
	s := &stack{t: t, name: "devspace-e2e-" + strings.ToLower(randomString(6)),
		files: []string{"compose.yaml", "compose.quick-tunnel.yaml", "compose.namespaces.yaml", "deploy/e2e/compose.e2e.yaml"},
		env: []string{"DEVSPACE_IMAGE=" + image, "DEVSPACE_PROJECT_DIR=" + dirs["alpha"], "DEVSPACE_PROJECT_LABEL=alpha",
			"DEVSPACE_CONSOLE_PORT=" + freePort(t),
			"E2E_BETA_DIR=" + dirs["beta"], "E2E_OWNER_PASSWORD_FILE=" + pw}}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.run("logs", "--no-color", "--tail", "40")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := s.run("down", "--volumes", "--remove-orphans", "--timeout", "20"); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})

	// The files as users run them are valid on their own too.
	for _, files := range [][]string{{"compose.yaml"}, {"compose.yaml", "compose.quick-tunnel.yaml"}, {"compose.yaml", "compose.namespaces.yaml"}} {
		plain := &stack{t: t, name: s.name, files: files, env: []string{"DEVSPACE_PROJECT_DIR=" + dirs["alpha"], "TUNNEL_TOKEN=x"}}
		plain.must("config", "--quiet")
	}

	start := time.Now()
	if out := s.must("run", "--rm", "-T", "devspace", "init"); !strings.Contains(out, "DevSpace state created in /data") {
		t.Fatalf("init: %s", out)
	}
	s.must("up", "--detach", "--wait", "--wait-timeout", "120")
	t.Logf("init + up (healthy) took %s", time.Since(start).Round(time.Millisecond))

	port := strings.TrimSpace(s.must("port", "cloudflared", "8080"))
	if !strings.HasPrefix(port, "127.0.0.1:") {
		t.Fatalf("stand-in tunnel published at %q, want 127.0.0.1 only", port)
	}
	const public = "https://e2e-tunnel.trycloudflare.com"
	e := newEndpoint(public, "http://"+port, "", "")

	// DEVSPACE_PUBLIC_BASE_URL=auto learned the tunnel's hostname.
	resp, body := e.get(t, "/.well-known/oauth-authorization-server")
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &meta) != nil || meta.Issuer != public {
		t.Fatalf("authorization server metadata through the tunnel: %s %s", resp.Status, body)
	}

	// The whole flow through the tunnel: consent, tokens, MCP, a command.
	c := e.register(t, "Compose")
	tok := e.grant(t, c, []string{"alpha", "beta"}, allScopes)
	cn := e.connect(t, tok.AccessToken, "compose")
	if refs := cn.projects(); len(refs) != 2 {
		t.Fatalf("list_projects: %v", refs)
	}
	cn.open("open", cn.projects()["alpha"])
	if out := cn.shell("id", "id -u; cat README.md", nil)["output"]; out != "10001\n# alpha\n" {
		t.Errorf("command output: %q", out)
	}
	// The sandbox is active (/readyz, asked from inside the container as
	// the appliance test does), and the command runs in its Landlock
	// domain: no state directory, no beta.
	if body := s.must("exec", "-T", "devspace", "curl", "-sS", "-m", "5", "-H", "Host: localhost", "http://127.0.0.1:7676/readyz"); !strings.Contains(body, `"command_sandbox":true`) {
		t.Errorf("/readyz: %s", body)
	}
	for _, f := range []string{"/data/auth.json", "/projects/beta/README.md"} {
		if out := cn.shell("read "+f, "cat "+f, nil); out["exitCode"] == float64(0) || !strings.Contains(out["output"].(string), "Permission denied") {
			t.Errorf("a command on alpha read %s: %v", f, out)
		}
	}

	// compose.namespaces.yaml's seccomp profile (issue 30): each command
	// has namespaces of its own, so SysV IPC and multiprocessing work, and
	// what a command creates there is gone with it; namespaces of its own
	// making stay refused.
	if out := s.must("exec", "-T", "devspace", "devspace", "doctor"); !strings.Contains(out, "(ipc=namespace)") || !strings.Contains(out, "(unix_sockets=gate)") {
		t.Errorf("doctor under compose.namespaces.yaml:\n%s", out)
	}
	pool := cn.shell("pool", `python3 -c 'import multiprocessing as m
with m.Pool(2) as p: print(sum(p.map(abs, range(-5, 5))))' && ipcmk -M 4096 >/dev/null && ipcs -m | grep -c 0x`, nil)
	if pool["exitCode"] != float64(0) || pool["output"] != "25\n1\n" {
		t.Errorf("multiprocessing and SysV IPC in the namespace tier: %v", pool)
	}
	if r := cn.shell("ipcs", "ipcs -m | grep -c 0x", nil); r["output"] != "0\n" {
		t.Errorf("a SysV segment outlived its command: %v", r)
	}
	if r := cn.shell("unshare", "unshare -U true", nil); r["exitCode"] == float64(0) {
		t.Errorf("a command created a user namespace: %v", r)
	}
	ordinaryWork(t, cn)

	// The owner CLI through `docker compose exec`, over the control listener.
	if out := s.must("exec", "-T", "devspace", "devspace", "grants", "list"); !strings.Contains(out, "Compose") || !strings.Contains(out, "alpha,beta") {
		t.Errorf("grants list:\n%s", out)
	}

	// The Owner's console: published on the host's loopback only; the link
	// `devspace admin` prints there works once; addressed by the compose
	// network's name (as cloudflared, or a tunnel routed to it by mistake,
	// would) it is refused.
	consolePort := strings.TrimSpace(s.must("port", "devspace", "7679"))
	if !strings.HasPrefix(consolePort, "127.0.0.1:") {
		t.Fatalf("console published at %q, want 127.0.0.1 only", consolePort)
	}
	var link string
	for _, line := range strings.Split(s.must("exec", "-T", "devspace", "devspace", "admin"), "\n") {
		if strings.HasPrefix(line, "http://127.0.0.1:7679/signin?token=") {
			link = strings.Replace(strings.TrimSpace(line), "127.0.0.1:7679", consolePort, 1)
		}
	}
	if link == "" {
		t.Fatal("devspace admin printed no link")
	}
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
		resp, err := noRedirect.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("console link, use %d: %s, want %d", i+1, resp.Status, want)
		}
	}
	if out, _ := s.run("exec", "-T", "cloudflared", "python3", "-c",
		"import urllib.request, urllib.error\ntry:\n  urllib.request.urlopen('http://devspace:7679/signin', timeout=5)\n  print('answered')\nexcept urllib.error.HTTPError as e:\n  print(e.code)"); strings.TrimSpace(out) != "403" {
		t.Errorf("the console through the compose network: %q, want 403", out)
	}

	// The tunnel reaches the public listener only; Prometheus reaches the
	// metrics; nothing reaches the control listener.
	probe := func(service string, targets ...string) map[string]string {
		t.Helper()
		out := s.must(append([]string{"exec", "-T", service, "python3", "-c", probeScript}, targets...)...)
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				got[f[0]] = f[1]
			}
		}
		return got
	}
	fromTunnel := probe("cloudflared", "devspace:7676", "devspace:7677", "devspace:7678", "devspace-metrics:7678")
	if fromTunnel["devspace:7676"] != "open" || fromTunnel["devspace:7677"] != "refused" || fromTunnel["devspace:7678"] != "refused" ||
		fromTunnel["devspace-metrics:7678"] == "open" {
		t.Errorf("from the tunnel: %v", fromTunnel)
	}
	fromMonitoring := probe("prometheus", "devspace-metrics:7678", "devspace-metrics:7677", "devspace:7677")
	t.Logf("from the tunnel: %v; from the monitoring network: %v", fromTunnel, fromMonitoring)
	if fromMonitoring["devspace-metrics:7678"] != "open" || fromMonitoring["devspace-metrics:7677"] != "refused" || fromMonitoring["devspace:7677"] != "refused" {
		t.Errorf("from the monitoring network: %v", fromMonitoring)
	}
	scrape := s.must("exec", "-T", "prometheus", "python3", "-c",
		"import urllib.request; print(urllib.request.urlopen('http://devspace-metrics:7678/metrics', timeout=5).read().decode())")
	if !strings.Contains(scrape, "devspace_tool_calls_total") {
		t.Errorf("metrics scraped from the monitoring network:\n%s", tail(scrape, 10))
	}

	if out := s.must("exec", "-T", "devspace", "devspace", "grants", "revoke-all"); !strings.Contains(out, "Revoked 1 grant") {
		t.Errorf("revoke-all: %s", out)
	}
	if r := cn.call("list_projects", nil); r.err == nil && !r.isError {
		t.Errorf("the grant works after revoke-all: %v", r.sc)
	}
}

// TestComposeOfflineWalk is the README's registry-free compose path as an
// owner walks it: in a directory holding compose.yaml, `cp
// deploy/compose.env.example .env` and edit it (the Project folder and
// label, and DEVSPACE_IMAGE uncommented; the example's UID/GID own the
// folder); `make image-local` builds that
// image for .env's UID/GID on the locally made Debian base; then compose
// (reading .env itself, no tunnel) runs `run --rm devspace init` and
// `up -d devspace`, and the owner CLI inside answers with the Project.
func TestComposeOfflineWalk(t *testing.T) {
	const tag = "devspace:e2e-local"
	// The example's DEVSPACE_UID/GID (1000) stand for the owner's own IDs
	// (`id -u`/`id -g`; the test runs as root, which the image refuses):
	// the Project folder belongs to them.
	const ownerID = 1000
	dirs := hostDirs(t, "walk")
	writeFile(t, filepath.Join(dirs["walk"], "README.md"), "# walk\n", 0o644)
	for _, p := range []string{dirs["walk"], filepath.Join(dirs["walk"], "README.md")} {
		if err := os.Chown(p, ownerID, ownerID); err != nil {
			t.Fatal(err)
		}
	}
	owner := t.TempDir()
	compose, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(owner, "compose.yaml"), string(compose), 0o644)
	example, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "compose.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	dotenv := editEnvFile(t, string(example), map[string]string{
		"DEVSPACE_PROJECT_DIR":   dirs["walk"],
		"DEVSPACE_PROJECT_LABEL": "walk",
		"#DEVSPACE_IMAGE":        tag,
		"#DEVSPACE_CONSOLE_PORT": freePort(t),
	})
	if !strings.Contains(dotenv, fmt.Sprintf("\nDEVSPACE_UID=%d\nDEVSPACE_GID=%d\n", ownerID, ownerID)) {
		t.Fatalf("deploy/compose.env.example no longer sets DEVSPACE_UID/GID=%d:\n%s", ownerID, dotenv)
	}
	writeFile(t, filepath.Join(owner, ".env"), dotenv, 0o600)

	mk := exec.Command("make", "--no-print-directory", "-C", repoRoot, "image-local", "LOCAL_IMAGE="+tag,
		"ENV_FILE="+filepath.Join(owner, ".env"))
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image-local: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "image", "rm", "-f", tag).Run() })
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Config.User}}", tag).Output(); err != nil ||
		strings.TrimSpace(string(out)) != fmt.Sprintf("%d:%d", ownerID, ownerID) {
		t.Fatalf("image-local did not build for .env's UID/GID: %q %v", out, err)
	}
	s := &stack{t: t, name: "devspace-walk-" + strings.ToLower(randomString(6)), dir: owner}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.run("logs", "--no-color", "--tail", "40")
			t.Logf("compose logs:\n%s", out)
		}
		s.run("down", "--volumes", "--remove-orphans", "--timeout", "20")
	})
	if out := s.must("run", "--rm", "-T", "devspace", "init"); !strings.Contains(out, "Owner password") {
		t.Fatalf("init: %s", out)
	}
	s.must("up", "--detach", "--wait", "--wait-timeout", "120", "devspace")
	if out := s.must("exec", "-T", "devspace", "devspace", "projects", "list"); !strings.Contains(out, "walk") ||
		!strings.Contains(out, "from the running server") {
		t.Errorf("projects list in the container:\n%s", out)
	}
}

// editEnvFile returns the env file text with each named line's value
// replaced; a key "#NAME" uncomments NAME. Every key must be in the file:
// the test follows the documented example, not a copy of its own.
func editEnvFile(t *testing.T, text string, set map[string]string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	for key, value := range set {
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, key+"=") {
				lines[i] = strings.TrimPrefix(key, "#") + "=" + value
				found = true
			}
		}
		if !found {
			t.Fatalf("deploy/compose.env.example has no %s= line", key)
		}
	}
	return strings.Join(lines, "\n")
}

// freePort returns a loopback port nothing listens on now, for a published
// port that must not collide with a console the developer runs.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
