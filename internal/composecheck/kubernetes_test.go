package composecheck_test

import (
	"bytes"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/telemetry"
)

var kubernetesDir = filepath.Join(repoRoot, "deploy", "kubernetes")

// secretName is the Secret the operator creates; no Secret is committed.
const secretName = "webhooks-secrets"

// environment is what a container's process sees: the ConfigMaps it reads
// whole, then its own env (a Secret reference as a placeholder value), and
// the names that come from Secrets.
func (m kubernetesManifests) environment(t *testing.T, c kContainer) (env map[string]string, fromSecret []string) {
	t.Helper()
	env = map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil {
			t.Errorf("container %s reads Secret %s whole; name each key, so every variable is checked", c.Name, from.SecretRef.Name)
		}
		if from.ConfigMapRef != nil {
			cm, ok := m.ConfigMaps[from.ConfigMapRef.Name]
			if !ok {
				t.Errorf("container %s reads ConfigMap %s, which is not in the kustomization", c.Name, from.ConfigMapRef.Name)
			}
			maps.Copy(env, cm.Data)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != secretName || ref.Key != e.Name {
				t.Errorf("container %s: %s comes from Secret %s key %s, want %s key %s", c.Name, e.Name, ref.Name, ref.Key, secretName, e.Name)
			}
			env[e.Name] = sampleSecrets[e.Name]
			fromSecret = append(fromSecret, e.Name)
		default:
			t.Errorf("container %s: %s has an unexpected valueFrom", c.Name, e.Name)
		}
	}
	return env, fromSecret
}

// sampleSecrets stand in for the Secret's values.
var sampleSecrets = map[string]string{
	"DATABASE_URL":           "postgres://webhooks:password@postgres.example:5432/webhooks?sslmode=require",
	"SECRET_ENCRYPTION_KEYS": sampleEnv["SECRET_ENCRYPTION_KEYS"],
	"INTERNAL_API_TOKEN":     sampleEnv["INTERNAL_API_TOKEN"],
}

func TestKubernetes_KustomizationListsEveryManifest(t *testing.T) {
	m := loadKubernetes(t) // fails on a listed file that is missing
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(m.Kustomization.Resources, name) {
			t.Errorf("%s is not listed in kustomization.yaml, so it is never applied", name)
		}
	}
	if len(m.Deployments) != 2 || len(m.Jobs) != 1 || len(m.Services) == 0 || len(m.PDBs) == 0 {
		t.Fatalf("found %d Deployments, %d Jobs, %d Services, %d PDBs: the parser is not reading the manifests",
			len(m.Deployments), len(m.Jobs), len(m.Services), len(m.PDBs))
	}
}

func TestKubernetes_WorkloadsRunTheRightSubcommand(t *testing.T) {
	m := loadKubernetes(t)
	main, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "webhooks", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"webhooks-api": "serve", "webhooks-worker": "worker", "webhooks-migrate": "migrate"}
	pods := m.pods()
	if len(pods) != len(want) {
		t.Errorf("workloads %v, want %v", slices.Sorted(maps.Keys(pods)), slices.Sorted(maps.Keys(want)))
	}
	for name, sub := range want {
		if !regexp.MustCompile(`\{"` + sub + `", "`).Match(main) {
			t.Fatalf("cmd/webhooks has no subcommand %q", sub)
		}
		p, ok := pods[name]
		if !ok || len(p.Containers) != 1 {
			t.Errorf("workload %s: want one container", name)
			continue
		}
		if c := p.Containers[0]; len(c.Command) != 0 || !slices.Equal(c.Args, []string{sub}) {
			t.Errorf("%s runs command %v args %v, want the image's entrypoint with args [%s]", name, c.Command, c.Args, sub)
		}
	}
}

func TestKubernetes_EnvironmentMatchesConfiguration(t *testing.T) {
	known := map[string]bool{}
	for _, n := range append(config.Names(), telemetry.EnvironmentVariables()...) {
		known[n] = true
	}
	m := loadKubernetes(t)
	required := map[string][]string{
		"webhooks-api":     {"DATABASE_URL", "SECRET_ENCRYPTION_KEYS", "INTERNAL_API_TOKEN"},
		"webhooks-worker":  {"DATABASE_URL", "SECRET_ENCRYPTION_KEYS"},
		"webhooks-migrate": {"DATABASE_URL"},
	}
	for name, p := range m.pods() {
		for _, c := range p.Containers {
			t.Run(name, func(t *testing.T) {
				env, fromSecret := m.environment(t, c)
				for key := range env {
					if !known[key] {
						t.Errorf("%s is not read by the binary (not in config.Names or the documented OTEL_* list)", key)
					}
				}
				for _, key := range required[name] {
					if !slices.Contains(fromSecret, key) {
						t.Errorf("%s must come from Secret %s", key, secretName)
					}
				}
				cfg, err := config.Load(func(k string) string { return env[k] })
				if err != nil {
					t.Fatalf("the binary would refuse this environment: %v", err)
				}
				for _, v := range []struct{ name, addr string }{{"HTTP_ADDR", cfg.HTTPAddr}, {"ADMIN_ADDR", cfg.AdminAddr}} {
					host, _, _ := net.SplitHostPort(v.addr)
					if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
						t.Errorf("%s=%s listens on loopback, unreachable for probes and Services", v.name, v.addr)
					}
				}
				if grace := p.TerminationGracePeriodSeconds; name != "webhooks-migrate" {
					stop := cfg.ShutdownGrace
					if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
						stop += time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
					}
					if grace == nil || time.Duration(*grace)*time.Second <= stop {
						t.Errorf("terminationGracePeriodSeconds %v is not longer than SHUTDOWN_GRACE_PERIOD plus preStop (%s): in-flight work is killed", grace, stop)
					}
				}
			})
		}
	}
}

// portNumber resolves a probe's or a Service's port, a name or a number,
// against the container's ports.
func portNumber(c kContainer, port string) int {
	for _, p := range c.Ports {
		if p.Name == port || strconv.Itoa(p.ContainerPort) == port {
			return p.ContainerPort
		}
	}
	return 0
}

func addrPort(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return n
}

func TestKubernetes_ProbesAskTheAdminEndpoints(t *testing.T) {
	m := loadKubernetes(t)
	for name, d := range m.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			env, _ := m.environment(t, c)
			cfg, err := config.Load(func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			admin := addrPort(t, cfg.AdminAddr)
			for _, probe := range []struct {
				kind, path string
				p          *kProbe
			}{{"liveness", "/healthz", c.LivenessProbe}, {"readiness", "/readyz", c.ReadinessProbe}} {
				if probe.p == nil || probe.p.HTTPGet == nil {
					t.Errorf("%s has no HTTP %s probe", name, probe.kind)
					continue
				}
				if probe.p.HTTPGet.Path != probe.path {
					t.Errorf("%s %s probe asks %s, want %s", name, probe.kind, probe.p.HTTPGet.Path, probe.path)
				}
				if got := portNumber(c, probe.p.HTTPGet.Port); got != admin {
					t.Errorf("%s %s probe port %q is %d, want the admin port %d (ADMIN_ADDR)", name, probe.kind, probe.p.HTTPGet.Port, got, admin)
				}
			}
		}
	}
}

func TestKubernetes_APIServiceReachesTheAPI(t *testing.T) {
	m := loadKubernetes(t)
	api := m.Deployments["webhooks-api"]
	svc, ok := m.Services["webhooks-api"]
	if !ok {
		t.Fatal("no Service webhooks-api")
	}
	if !isSubset(svc.Spec.Selector, api.Spec.Template.Metadata.Labels) || isSubset(svc.Spec.Selector, m.Deployments["webhooks-worker"].Spec.Template.Metadata.Labels) {
		t.Errorf("Service selector %v must select the API's pods %v and not the worker's", svc.Spec.Selector, api.Spec.Template.Metadata.Labels)
	}
	c := api.Spec.Template.Spec.Containers[0]
	env, _ := m.environment(t, c)
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range svc.Spec.Ports {
		if got := portNumber(c, p.TargetPort); got != addrPort(t, cfg.HTTPAddr) {
			t.Errorf("Service port %s targets %q (%d), want HTTP_ADDR's port %s", p.Name, p.TargetPort, got, cfg.HTTPAddr)
		}
	}
}

func isSubset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false // an empty selector selects everything
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetes_EachDeploymentHasItsOwnDisruptionBudget(t *testing.T) {
	m := loadKubernetes(t)
	covered := map[string]int{}
	for pdbName, pdb := range m.PDBs {
		if (pdb.Spec.MinAvailable == "") == (pdb.Spec.MaxUnavailable == "") {
			t.Errorf("PDB %s: set exactly one of minAvailable and maxUnavailable", pdbName)
		}
		selected := 0
		for name, d := range m.Deployments {
			if isSubset(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
				covered[name]++
				selected++
			}
		}
		if selected != 1 {
			t.Errorf("PDB %s selects %v: %d Deployments' pods, want exactly one", pdbName, pdb.Spec.Selector.MatchLabels, selected)
		}
	}
	for name, d := range m.Deployments {
		if !isSubset(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
			t.Errorf("Deployment %s selector %v does not match its pods' labels %v", name, d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
		}
		if covered[name] != 1 {
			t.Errorf("Deployment %s is covered by %d PDBs, want 1", name, covered[name])
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			t.Errorf("Deployment %s runs %v replicas: a PDB cannot keep one replica up through a drain", name, d.Spec.Replicas)
		}
	}
}

func TestKubernetes_ImagesMatchTheBuild(t *testing.T) {
	m := loadKubernetes(t)
	compose := loadCompose(t, sampleEnv).Services["api"].Image // built from ./Dockerfile
	want := imageRepository(compose)
	if len(m.Kustomization.Images) != 1 || m.Kustomization.Images[0].Name != want {
		t.Errorf("kustomization images %+v, want one entry for %s (the image compose builds)", m.Kustomization.Images, want)
	}
	for name, p := range m.pods() {
		for _, c := range p.Containers {
			if imageRepository(c.Image) != want {
				t.Errorf("%s/%s runs image %s, want %s", name, c.Name, c.Image, want)
			}
		}
	}
}

// imageRepository is an image reference without its tag and digest.
func imageRepository(image string) string {
	image, _, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

// The image is distroless nonroot (uid 65532, no shell); the pods say so
// and lock down everything the binary does not need.
func TestKubernetes_PodsRunNonRootReadOnlyWithResources(t *testing.T) {
	m := loadKubernetes(t)
	for name, p := range m.pods() {
		sc := p.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s: pod securityContext must set runAsNonRoot, runAsUser 65532 and seccompProfile RuntimeDefault", name)
		}
		if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token it never uses", name)
		}
		for _, c := range p.Containers {
			cs := c.SecurityContext
			if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
				cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
				cs.Capabilities == nil || !slices.Equal(cs.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("%s/%s: want readOnlyRootFilesystem, no privilege escalation and every capability dropped", name, c.Name)
			}
			if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
				t.Errorf("%s/%s: want CPU and memory requests and a memory limit, got %+v", name, c.Name, c.Resources)
			}
		}
	}
}

// TestKubernetes_ModelIsStrict: the strict decoding that the checks above
// rely on refuses a misspelt field.
func TestKubernetes_ModelIsStrict(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubernetesDir, "api-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d kDeployment
	if err := decodeStrict(b, &d); err != nil {
		t.Fatal(err)
	}
	typo := bytes.Replace(b, []byte("readOnlyRootFilesystem"), []byte("readOnlyRootFileSystem"), 1)
	if err := decodeStrict(typo, &d); err == nil || !strings.Contains(err.Error(), "readOnlyRootFileSystem") {
		t.Fatalf("a misspelt field decoded: err = %v", err)
	}
	if err := decodeStrict(append(b, []byte("---\nkind: Secret\n")...), &d); err == nil {
		t.Fatal("a second document in one file decoded")
	}
}
