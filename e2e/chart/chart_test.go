// Package chart renders the Helm chart charts/devspace with Helm's own Go
// packages, offline, and decodes every manifest strictly into the
// Kubernetes API types (unknown or misspelled fields and wrong types fail),
// then checks what the chart promises: restricted pod security, one
// replica that is recreated, probes that pass the Host allowlist, the
// NetworkPolicy, no route to the control listener. It also runs Helm's
// linter as `helm lint --strict` does. `make helm-lint` runs it.
package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "../../charts/devspace"

// kubeVersion is the oldest Kubernetes the chart is checked against.
const kubeVersion = "v1.30.0"

// serviceMonitor is the part of the Prometheus Operator's type the chart
// uses; decoding is strict, so any other field fails.
type serviceMonitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// rendered is a release's objects by kind and name.
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	services     map[string]*corev1.Service
	secrets      map[string]*corev1.Secret
	pvcs         map[string]*corev1.PersistentVolumeClaim
	accounts     map[string]*corev1.ServiceAccount
	policies     map[string]*networkingv1.NetworkPolicy
	ingresses    map[string]*networkingv1.Ingress
	monitors     map[string]*serviceMonitor
	notes        string
	manifestText string
}

func load(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parseValues parses values (YAML) and the Kubernetes version the chart is
// checked against.
func parseValues(t *testing.T, values string) (chartutil.Values, *chartutil.KubeVersion) {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	return vals, kv
}

// render renders the chart with values (YAML) as release "rel" in
// namespace "dev" and decodes every manifest strictly.
func render(t *testing.T, c *chart.Chart, values string) (*rendered, error) {
	t.Helper()
	vals, kv := parseValues(t, values)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	top, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "rel", Namespace: "dev", IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: true}.Render(c, top)
	if err != nil {
		return nil, err
	}
	r := &rendered{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		secrets: map[string]*corev1.Secret{}, pvcs: map[string]*corev1.PersistentVolumeClaim{},
		accounts: map[string]*corev1.ServiceAccount{}, policies: map[string]*networkingv1.NetworkPolicy{},
		ingresses: map[string]*networkingv1.Ingress{}, monitors: map[string]*serviceMonitor{}}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = files[name]
			continue
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			if err := r.decode([]byte(doc)); err != nil {
				t.Fatalf("%s document %d: %v\n%s", name, i, err, doc)
			}
			r.manifestText += doc + "\n---\n"
		}
	}
	return r, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decode decodes one manifest strictly into its API type.
func (r *rendered) decode(doc []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	strict := func(obj any) error { return yaml.UnmarshalStrict(doc, obj) }
	name := head.Metadata.Name
	if name == "" {
		return fmt.Errorf("%s without a name", head.Kind)
	}
	var err error
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		err, r.deployments[name] = strict(o), o
	case "v1 Service":
		o := &corev1.Service{}
		err, r.services[name] = strict(o), o
	case "v1 Secret":
		o := &corev1.Secret{}
		err, r.secrets[name] = strict(o), o
	case "v1 PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		err, r.pvcs[name] = strict(o), o
	case "v1 ServiceAccount":
		o := &corev1.ServiceAccount{}
		err, r.accounts[name] = strict(o), o
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		err, r.policies[name] = strict(o), o
	case "networking.k8s.io/v1 Ingress":
		o := &networkingv1.Ingress{}
		err, r.ingresses[name] = strict(o), o
	case "monitoring.coreos.com/v1 ServiceMonitor":
		o := &serviceMonitor{}
		err, r.monitors[name] = strict(o), o
	default:
		return fmt.Errorf("unexpected kind %s %s", head.APIVersion, head.Kind)
	}
	return err
}

// valueSets are the values the chart must render: each file in
// charts/devspace/ci plus a minimal one.
func valueSets(t *testing.T) map[string]string {
	t.Helper()
	sets := map[string]string{"minimal": "publicBaseURL: https://devspace.example.com\nprojects: [{label: code, existingClaim: code}]\n"}
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci values: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sets[filepath.Base(f)] = string(b)
	}
	return sets
}

// lintChart runs Helm's linter (what `helm lint --strict` runs) on the
// chart in dir with values, and returns every warning and error.
func lintChart(t *testing.T, dir, values string) []support.Message {
	t.Helper()
	vals, kv := parseValues(t, values)
	var bad []support.Message
	for _, m := range lint.AllWithKubeVersion(dir, vals, "dev", kv).Messages {
		if m.Severity >= support.WarningSev {
			bad = append(bad, m)
		}
	}
	return bad
}

// TestChartLint is `helm lint --strict` with each value set: a warning
// fails as an error does.
func TestChartLint(t *testing.T) {
	for name, values := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			for _, m := range lintChart(t, chartDir, values) {
				t.Error(m)
			}
		})
	}
}

// TestChartLintFinds proves the lint can fail: a copy of the chart with a
// template that is not YAML.
func TestChartLintFinds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devspace")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "broken.yaml"), []byte("kind: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := lintChart(t, dir, valueSets(t)["minimal"]); len(bad) == 0 {
		t.Fatal("lint passed a chart with a template that is not YAML")
	}
}

func TestChartRenders(t *testing.T) {
	c := load(t)
	for name, values := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r, err := render(t, c, values)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			checkRelease(t, r, values)
		})
	}
}

// checkRelease checks the promises every release keeps.
func checkRelease(t *testing.T, r *rendered, values string) {
	t.Helper()
	vals, _ := chartutil.ReadValues([]byte(values))
	server := r.deployments["rel-devspace"]
	if server == nil {
		t.Fatalf("no rel-devspace Deployment: %v", keys(r.deployments))
	}
	if server.Spec.Replicas == nil || *server.Spec.Replicas != 1 || server.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("server: replicas %v, strategy %q; want 1 and Recreate", server.Spec.Replicas, server.Spec.Strategy.Type)
	}
	for name, d := range r.deployments {
		checkRestricted(t, name, &d.Spec.Template.Spec)
		// Every Deployment's selector matches its pods.
		for k, v := range d.Spec.Selector.MatchLabels {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: selector %s=%s does not match the pod labels %v", name, k, v, d.Spec.Template.Labels)
			}
		}
	}
	pod := server.Spec.Template.Spec
	ctr := pod.Containers[0]
	if pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser != 10001 {
		t.Errorf("server runs as %v, want 10001", pod.SecurityContext.RunAsUser)
	}
	// Probes name a Host the public listener accepts.
	for what, p := range map[string]*corev1.Probe{"startup": ctr.StartupProbe, "liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || len(p.HTTPGet.HTTPHeaders) != 1 || p.HTTPGet.HTTPHeaders[0].Name != "Host" || p.HTTPGet.HTTPHeaders[0].Value != "localhost" {
			t.Errorf("%s probe: %+v", what, p)
		}
	}
	if ctr.ReadinessProbe.HTTPGet.Path != "/readyz" || ctr.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probe paths: readiness %s, liveness %s", ctr.ReadinessProbe.HTTPGet.Path, ctr.LivenessProbe.HTTPGet.Path)
	}
	// The control listener (7677) is neither a container port nor any
	// Service's target; the metrics have their own Service.
	for _, p := range ctr.Ports {
		if p.ContainerPort == 7677 {
			t.Error("the control port is a container port")
		}
	}
	if strings.Contains(r.manifestText, "7677") {
		t.Error("a manifest mentions the control port 7677")
	}
	if svc := r.services["rel-devspace"]; svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("public Service: %+v", svc)
	}
	if svc := r.services["rel-devspace-metrics"]; svc == nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics Service: %+v", svc)
	}
	for name, svc := range r.services {
		if !selectsSome(svc.Spec.Selector, r.deployments) {
			t.Errorf("Service %s selects no pod: %v", name, svc.Spec.Selector)
		}
	}
	// Environment and mounts agree on the Projects.
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	// The Owner's console stays on the pod's loopback (kubectl
	// port-forward reaches it there): no port, no Service, no policy rule.
	if env["DEVSPACE_ADMIN_LISTEN"] != "127.0.0.1:7679" {
		t.Errorf("DEVSPACE_ADMIN_LISTEN = %q, want the pod's loopback", env["DEVSPACE_ADMIN_LISTEN"])
	}
	for _, p := range ctr.Ports {
		if p.ContainerPort == 7679 {
			t.Errorf("the console's port is declared: %+v", p)
		}
	}
	mounts := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath] = true
	}
	var want []string
	projects, _ := vals["projects"].([]any)
	for _, p := range projects {
		label := p.(map[string]any)["label"].(string)
		want = append(want, label+"=/projects/"+label)
		if !mounts["/projects/"+label] {
			t.Errorf("Project %s is not mounted", label)
		}
	}
	if env["DEVSPACE_PROJECTS"] != strings.Join(want, ",") {
		t.Errorf("DEVSPACE_PROJECTS = %q, want %q", env["DEVSPACE_PROJECTS"], strings.Join(want, ","))
	}
	for _, m := range []string{"/data", "/tmp", "/home/devspace", "/run/secrets/devspace"} {
		if !mounts[m] {
			t.Errorf("%s is not mounted (the root filesystem is read-only)", m)
		}
	}
	if env["DEVSPACE_OWNER_PASSWORD_FILE"] != "/run/secrets/devspace/owner-password" {
		t.Errorf("DEVSPACE_OWNER_PASSWORD_FILE = %q", env["DEVSPACE_OWNER_PASSWORD_FILE"])
	}
	if !strings.Contains(env["DEVSPACE_OAUTH_SCOPES"], "process:execute") {
		t.Errorf("DEVSPACE_OAUTH_SCOPES = %q", env["DEVSPACE_OAUTH_SCOPES"])
	}
	if cf := r.deployments["rel-devspace-cloudflared"]; cf != nil {
		if slices.ContainsFunc(server.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return strings.Contains(c.Image, "cloudflared") }) {
			t.Error("cloudflared runs as a sidecar, sharing the control listener's loopback")
		}
		args := strings.Join(cf.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--no-autoupdate") || !strings.Contains(args, "--metrics 0.0.0.0:20241") {
			t.Errorf("cloudflared args: %s", args)
		}
		if env["DEVSPACE_PUBLIC_BASE_URL"] == "auto" {
			if !strings.Contains(args, "--url http://rel-devspace:7676") || env["DEVSPACE_CLOUDFLARED_METRICS"] != "http://rel-devspace-cloudflared:20241" ||
				r.services["rel-devspace-cloudflared"] == nil || r.services["rel-devspace-cloudflared"].Spec.Ports[0].Port != 20241 {
				t.Errorf("quick tunnel: args %q, DEVSPACE_CLOUDFLARED_METRICS %q, services %v", args, env["DEVSPACE_CLOUDFLARED_METRICS"], keys(r.services))
			}
		} else if e := cf.Spec.Template.Spec.Containers[0].Env; len(e) != 1 || e[0].Name != "TUNNEL_TOKEN" || e[0].ValueFrom == nil || e[0].ValueFrom.SecretKeyRef == nil {
			t.Errorf("named tunnel: token env %+v", e)
		}
	}
	// The NetworkPolicy admits only cloudflared and the configured peers to
	// the public port, and the metrics peers to the metrics port.
	if np := r.policies["rel-devspace"]; np != nil {
		if !matches(np.Spec.PodSelector.MatchLabels, server.Spec.Template.Labels) {
			t.Errorf("NetworkPolicy selects %v", np.Spec.PodSelector.MatchLabels)
		}
		if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
			t.Errorf("policy types %v", np.Spec.PolicyTypes)
		}
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				t.Errorf("an ingress rule admits everyone: %+v", rule)
			}
			if len(rule.Ports) != 1 || (rule.Ports[0].Port.String() != "http" && rule.Ports[0].Port.String() != "metrics") {
				t.Errorf("an ingress rule opens %+v", rule.Ports)
			}
			if rule.Ports[0].Port.String() == "http" && r.deployments["rel-devspace-cloudflared"] != nil &&
				!slices.ContainsFunc(rule.From, func(p networkingv1.NetworkPolicyPeer) bool {
					return p.PodSelector != nil && p.PodSelector.MatchLabels["app.kubernetes.io/component"] == "cloudflared"
				}) {
				t.Errorf("cloudflared may not reach the public port: %+v", rule.From)
			}
		}
	} else if !strings.Contains(values, "networkPolicy:\n  enabled: false") {
		t.Error("no NetworkPolicy")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the server pod mounts a service account token that commands could use")
	}
	if !strings.Contains(r.notes, "/mcp") || !strings.Contains(r.notes, "devspace grants list") {
		t.Errorf("NOTES.txt:\n%s", r.notes)
	}
}

// checkRestricted checks Pod Security "restricted" (and a read-only root
// filesystem) for every container of a pod.
func checkRestricted(t *testing.T, name string, pod *corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v", name, psc)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("%s shares a host namespace", name)
	}
	for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.Privileged != nil && *sc.Privileged ||
			sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault &&
			(sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost || sc.SeccompProfile.LocalhostProfile == nil) {
			t.Errorf("%s/%s: securityContext %+v", name, c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s has no memory limit", name, c.Name)
		}
	}
}

func TestChartRefusesBadValues(t *testing.T) {
	c := load(t)
	base := "projects: [{label: code, existingClaim: code}]\n"
	for name, tt := range map[string]struct{ values, want string }{
		"no public URL":           {base, "publicBaseURL is required"},
		"http public URL":         {base + "publicBaseURL: http://devspace.example.com\n", "publicBaseURL"},
		"public URL with /mcp":    {base + "publicBaseURL: https://devspace.example.com/mcp\n", "publicBaseURL"},
		"auto without quick":      {base + "publicBaseURL: auto\n", "enable cloudflared.enabled and cloudflared.quickTunnel"},
		"tunnel without token":    {base + "publicBaseURL: https://d.example.com\ncloudflared: {enabled: true}\n", "needs the tunnel token"},
		"duplicate label":         {"publicBaseURL: https://d.example.com\nprojects: [{label: a, existingClaim: one}, {label: a, existingClaim: two}]\n", `label "a" is used twice`},
		"bad label":               {"publicBaseURL: https://d.example.com\nprojects: [{label: ../x, existingClaim: x}]\n", "label"},
		"hostPath and claim":      {"publicBaseURL: https://d.example.com\nprojects: [{label: a, hostPath: /a, existingClaim: x}]\n", "oneOf"},
		"misspelled value":        {base + "publicBaseURL: https://d.example.com\npersistence: {sise: 1Gi}\n", "sise"},
		"unknown scope":           {base + "publicBaseURL: https://d.example.com\noauthScopes: [project:read, admin]\n", "oauthScopes"},
		"scopes without read":     {base + "publicBaseURL: https://d.example.com\noauthScopes: [project:write]\n", "oauthScopes"},
		"ingress without host":    {base + "publicBaseURL: https://d.example.com\ningress: {enabled: true}\n", "ingress.host is required"},
		"root user":               {base + "publicBaseURL: https://d.example.com\nsecurityContext: {runAsUser: 0, runAsGroup: 0, fsGroup: 0}\n", "runAsUser"},
		"unknown top-level value": {base + "publicBaseURL: https://d.example.com\nsidecar: true\n", "sidecar"},
		"profile not a file":      {base + "publicBaseURL: https://d.example.com\nsecurityContext: {runAsUser: 1, runAsGroup: 1, fsGroup: 1, seccompLocalhostProfile: /etc/passwd}\n", "seccompLocalhostProfile"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, c, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestOwnerSecret(t *testing.T) {
	c := load(t)
	r, err := render(t, c, "publicBaseURL: https://d.example.com\nprojects: []\n")
	if err != nil {
		t.Fatal(err)
	}
	s := r.secrets["rel-devspace-owner"]
	if s == nil || len(s.Data["owner-password"]) != 32 {
		t.Fatalf("generated owner Secret: %+v", s)
	}
	if s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the owner Secret is not kept when the release is deleted")
	}
	r, err = render(t, c, "publicBaseURL: https://d.example.com\nowner: {existingSecret: mine}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.secrets) != 0 || r.deployments["rel-devspace"].Spec.Template.Spec.Volumes[1].Secret.SecretName != "mine" {
		t.Errorf("with owner.existingSecret: secrets %v", keys(r.secrets))
	}
}

func selectsSome(sel map[string]string, ds map[string]*appsv1.Deployment) bool {
	for _, d := range ds {
		if matches(sel, d.Spec.Template.Labels) {
			return true
		}
	}
	return false
}

// matches reports whether labels satisfy the (non-empty) selector sel.
func matches(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func keys[M ~map[string]V, V any](m M) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartUnixGate: securityContext.unixGate lists SYS_PTRACE in the
// containers' capabilities (so that RuntimeDefault allows pidfd_getfd)
// and changes nothing else of their security context; by default no
// capability is added (checkRestricted), and never to cloudflared.
func TestChartUnixGate(t *testing.T) {
	c := load(t)
	r, err := render(t, c, "publicBaseURL: https://devspace.example.com\nprojects: [{label: code, existingClaim: code}]\n"+
		"cloudflared: {enabled: true, quickTunnel: true}\n"+
		"securityContext: {runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, unixGate: true}\n")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	server := r.deployments["rel-devspace"]
	if server == nil {
		t.Fatalf("no rel-devspace Deployment: %v", keys(r.deployments))
	}
	for _, ctr := range server.Spec.Template.Spec.Containers {
		sc := ctr.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE"}) ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: securityContext %+v", ctr.Name, sc)
		}
	}
	// cloudflared runs no commands: nothing is added to it.
	cf := r.deployments["rel-devspace-cloudflared"]
	if cf == nil {
		t.Fatalf("no cloudflared Deployment: %v", keys(r.deployments))
	}
	checkRestricted(t, "rel-devspace-cloudflared", &cf.Spec.Template.Spec)
}

// TestChartSeccompProfile: securityContext.seccompLocalhostProfile gives
// DevSpace's containers (not cloudflared's) the Localhost profile, adds
// no capability, and stays within the restricted Pod Security standard.
func TestChartSeccompProfile(t *testing.T) {
	c := load(t)
	r, err := render(t, c, "publicBaseURL: https://devspace.example.com\nprojects: [{label: code, existingClaim: code}]\n"+
		"cloudflared: {enabled: true, quickTunnel: true}\n"+
		"securityContext: {runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompLocalhostProfile: devspace.json}\n")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	for name, d := range r.deployments {
		checkRestricted(t, name, &d.Spec.Template.Spec)
		for _, ctr := range append(append([]corev1.Container{}, d.Spec.Template.Spec.InitContainers...), d.Spec.Template.Spec.Containers...) {
			sp := ctr.SecurityContext.SeccompProfile
			local := sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile != nil && *sp.LocalhostProfile == "devspace.json"
			if local != (name == "rel-devspace") {
				t.Errorf("%s/%s: seccompProfile %+v", name, ctr.Name, sp)
			}
		}
	}
	if r.deployments["rel-devspace"] == nil || len(r.deployments) < 2 {
		t.Fatalf("deployments: %v", keys(r.deployments))
	}
}
