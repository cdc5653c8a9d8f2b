package process

import (
	"os"
	"strings"
	"testing"
)

// TestConfinedCommandHasNoCapabilities: a server run as root handed every
// command root's capabilities, which Landlock does not restrict (found by
// an attacker review: CAP_NET_RAW captured another grant's bearer token on
// loopback; CAP_CHOWN and CAP_SYS_ADMIN changed the owner and trusted
// attributes of auth.json). A confined command holds none, in any set,
// and cannot gain one by exec; the sandbox-off twin shows what it had.
func TestConfinedCommandHasNoCapabilities(t *testing.T) {
	caps := func(out string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Cap") {
				m[k] = strings.TrimSpace(v)
			}
		}
		return m
	}
	// sh execs grep: the sets after an exec are what counts.
	const probe = "grep ^Cap /proc/self/status"
	a := newAppliance(t, Options{})
	code, out := a.run(t, "execA", a.alpha, false, probe)
	got := caps(out)
	if code != 0 || len(got) != 5 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for k, v := range got {
		if v != "0000000000000000" {
			t.Errorf("a confined command holds capabilities: %s %s", k, v)
		}
	}
	if os.Geteuid() != 0 {
		return // the twin shows nothing without root
	}
	off := newAppliance(t, Options{Sandbox: SandboxOptions{Off: true}})
	if _, out := off.run(t, "execA", off.alpha, false, probe); caps(out)["CapEff"] == "0000000000000000" {
		t.Errorf("control: an unconfined command of a root server holds no capabilities: %s", out)
	}
}
