package composecheck_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/internal/composecheck"
	"github.com/jobhooks/jobhooks/telemetry"
)

const repoRoot = "../.."

// sampleEnv is what an operator's .env supplies for the required secrets.
var sampleEnv = map[string]string{
	"SECRET_ENCRYPTION_KEYS": "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
	"INTERNAL_API_TOKEN":     "whi_0123456789abcdef0123456789abcdef",
}

// ourServices run the webhooks binary and read config.Config.
var ourServices = []string{"migrate", "api", "worker"}

// scalableServices must run as many replicas as `--scale` asks.
var scalableServices = []string{"api", "worker"}

func loadCompose(t *testing.T, env map[string]string) *types.Project {
	t.Helper()
	f, err := composecheck.Load(context.Background(), filepath.Join(repoRoot, "docker-compose.yml"), env)
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return f
}

func TestCompose_HasTheTopology(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	for _, name := range []string{"postgres", "temporal", "temporal-ui", "migrate", "api", "worker", "otel-collector", "prometheus", "grafana"} {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("service %s is missing", name)
		}
	}
	for name, s := range f.Services {
		for dep := range s.DependsOn {
			if _, ok := f.Services[dep]; !ok {
				t.Errorf("service %s depends on unknown service %s", name, dep)
			}
		}
	}
	for _, name := range []string{"otel-collector", "prometheus", "grafana"} {
		if len(f.Services[name].Profiles) == 0 {
			t.Errorf("optional service %s has no profile, so it always starts", name)
		}
	}
	for _, name := range []string{"api", "worker"} {
		if got := f.Services[name].Command; len(got) == 0 {
			t.Errorf("service %s has no command", name)
		}
	}
	if got := f.Services["api"].Command[0]; got != "serve" {
		t.Errorf("api runs %q, want serve", got)
	}
	if got := f.Services["worker"].Command[0]; got != "worker" {
		t.Errorf("worker runs %q, want worker", got)
	}
}

func TestCompose_EnvironmentMatchesConfiguration(t *testing.T) {
	known := map[string]bool{}
	for _, n := range config.Names() {
		known[n] = true
	}
	for _, n := range telemetry.EnvironmentVariables() {
		known[n] = true
	}
	f := loadCompose(t, sampleEnv)
	for _, name := range ourServices {
		s := f.Services[name]
		env := composecheck.Environment(s)
		t.Run(name, func(t *testing.T) {
			for key := range env {
				if !known[key] {
					t.Errorf("environment key %s is not read by the binary (not in config.Names or the documented OTEL_* list)", key)
				}
			}
			for _, required := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "SECRET_ENCRYPTION_KEYS", "INTERNAL_API_TOKEN"} {
				if env[required] == "" {
					t.Errorf("%s is not set", required)
				}
			}
			cfg, err := config.Load(func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("the binary would refuse this environment: %v", err)
			}
			for _, v := range []struct{ name, addr string }{{"HTTP_ADDR", cfg.HTTPAddr}, {"ADMIN_ADDR", cfg.AdminAddr}} {
				host, _, _ := net.SplitHostPort(v.addr)
				if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
					t.Errorf("%s=%s listens on loopback, unreachable from other containers", v.name, v.addr)
				}
			}
			temporalHost, _, _ := net.SplitHostPort(cfg.TemporalAddress)
			if _, ok := f.Services[temporalHost]; !ok {
				t.Errorf("TEMPORAL_ADDRESS host %q is not a compose service", temporalHost)
			}
			u, err := url.Parse(cfg.DatabaseURL)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := f.Services[u.Hostname()]; !ok {
				t.Errorf("DATABASE_URL host %q is not a compose service", u.Hostname())
			}
		})
	}
}

func TestCompose_RequiredSecretsFailLoudlyWhenUnset(t *testing.T) {
	for name := range sampleEnv {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range sampleEnv {
				if k != name {
					env[k] = v
				}
			}
			_, err := composecheck.Load(context.Background(), filepath.Join(repoRoot, "docker-compose.yml"), env)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("compose with %s unset: err = %v, want one naming it", name, err)
			}
		})
	}
}

func TestCompose_ScalableServicesHaveNoFixedNameOrHostPort(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	for _, name := range scalableServices {
		s := f.Services[name]
		if s.ContainerName != "" {
			t.Errorf("%s has container_name %q; --scale needs it unset", name, s.ContainerName)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes host ports %v; a second replica could not bind them", name, s.Ports)
		}
	}
}

func TestCompose_HostPortsDoNotClash(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	owner := map[int]string{}
	for name, s := range f.Services {
		ports, err := composecheck.PublishedPorts(s.Ports)
		if err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		for _, p := range ports {
			if other, taken := owner[p.Port]; taken {
				t.Errorf("host port %d is published by both %s and %s", p.Port, other, name)
			}
			owner[p.Port] = name
		}
	}
	if len(owner) == 0 {
		t.Fatal("no published ports found; the parser is not reading ports")
	}
}

func TestCompose_ImagesArePinned(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	pinned := regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$`)
	for name, s := range f.Services {
		if slices.Contains(ourServices, name) {
			continue // built from this repository
		}
		tag := ""
		if i := strings.LastIndex(s.Image, ":"); i > 0 {
			tag = s.Image[i+1:]
		}
		if !pinned.MatchString(s.Image) || tag == "" || tag == "latest" || !regexp.MustCompile(`\d+\.\d+`).MatchString(tag) {
			t.Errorf("service %s image %q is not pinned to a version", name, s.Image)
		}
	}
}

func TestCompose_MountedFilesExist(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			switch v.Type {
			case types.VolumeTypeVolume:
				if _, ok := f.Volumes[v.Source]; !ok {
					t.Errorf("service %s mounts volume %q that is not declared", name, v.Source)
				}
			case types.VolumeTypeBind:
				// Sources are resolved against the compose file's directory.
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("service %s mounts %s: %v", name, v.Source, err)
				}
			}
		}
	}
}

func TestDeployFiles_AreValidYAML(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "deploy", "*.y*ml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.yml files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(b, &v); err != nil || len(v) == 0 {
			t.Errorf("%s: not a YAML mapping: %v", f, err)
		}
	}
}

func TestDockerfile_StaticNonRootPinned(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(text, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, found %d FROM lines", len(froms))
	}
	for _, m := range froms {
		if !strings.Contains(m[1], ":") || strings.HasSuffix(m[1], ":latest") {
			t.Errorf("base image %s is not pinned", m[1])
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "USER nonroot", "./cmd/webhooks"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^USER\s+(root|0)\b`).MatchString(text) {
		t.Error("Dockerfile runs as root")
	}
}

// Load interpolates as Docker Compose does (an empty but set variable is
// not unset, $$ is a literal $) and validates against the Compose schema.
func TestLoad_InterpolatesAndValidatesAsCompose(t *testing.T) {
	write := func(t *testing.T, text string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "compose.yml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write(t, `name: t
services:
  s:
    image: "busybox:${TAG:-1.37}"
    environment:
      DEFAULTED: ${UNSET:-fallback}
      EMPTY_NOT_UNSET: ${EMPTY-default}
      DOLLAR: "a$$b"
      REQUIRED: ${NEEDED:?set NEEDED}
`)
	p, err := composecheck.Load(context.Background(), path, map[string]string{"EMPTY": "", "NEEDED": "yes"})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Services["s"]
	got := composecheck.Environment(s)
	want := map[string]string{"DEFAULTED": "fallback", "EMPTY_NOT_UNSET": "", "DOLLAR": "a$b", "REQUIRED": "yes"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s.Image != "busybox:1.37" {
		t.Errorf("image = %q", s.Image)
	}
	if _, err := composecheck.Load(context.Background(), path, nil); err == nil || !strings.Contains(err.Error(), "NEEDED") {
		t.Errorf("required variable unset: err = %v, want one naming NEEDED", err)
	}

	t.Run("ErrSchema", func(t *testing.T) {
		bad := write(t, "name: t\nservices:\n  s:\n    image: busybox:1.37\n    restart_policy: always\n")
		if _, err := composecheck.Load(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "restart_policy") {
			t.Fatalf("unknown service attribute: err = %v, want a schema error naming it", err)
		}
	})
	t.Run("ErrUnknownDependency", func(t *testing.T) {
		bad := write(t, "name: t\nservices:\n  s:\n    image: busybox:1.37\n    depends_on: [missing]\n")
		if _, err := composecheck.Load(context.Background(), bad, nil); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("depends_on an unknown service: err = %v", err)
		}
	})
}
