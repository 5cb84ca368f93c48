package composecheck_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/jobhooks/jobhooks/telemetry"
)

var grafanaDir = filepath.Join(repoRoot, "deploy", "grafana")

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID    string `json:"uid"`
	Title  string `json:"title"`
	Panels []struct {
		Title      string     `json:"title"`
		Datasource datasource `json:"datasource"`
		Targets    []struct {
			Expr       string     `json:"expr"`
			Datasource datasource `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(grafanaDir, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in deploy/grafana/dashboards: %v", err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		var d dashboard
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: a dashboard needs a uid, a title and panels", f)
		}
		out[f] = d
	}
	return out
}

// exportedMetrics scrapes what a process of the service serves on /metrics
// after one delivery of each outcome: the sample names Prometheus stores.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "dashboard-check", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	tel.Delivery.AttemptFinished(ctx, telemetry.Attempt{EventType: "job.run.completed", Outcome: telemetry.AttemptHTTPError, Number: 1, Duration: time.Millisecond})
	tel.Delivery.AttemptFinished(ctx, telemetry.Attempt{EventType: "job.run.completed", Outcome: telemetry.AttemptSucceeded, Number: 2, Duration: time.Millisecond})
	tel.Delivery.DeliveryFinished(ctx, "job.run.completed", telemetry.DeliveryDelivered, time.Second)
	tel.Delivery.DeliveryFinished(ctx, "job.run.completed", telemetry.DeliveryFailed, 0)
	if err := telemetry.RegisterBacklog(tel.MeterProvider, func(context.Context) (int64, int64, error) { return 1, 2, nil }); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	if !names["webhooks_deliveries_total"] {
		t.Fatalf("scrape lacks the delivery metrics:\n%s", body)
	}
	return names
}

var (
	promLabelMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping      = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promRange         = regexp.MustCompile(`\[[^\]]*\]`)
	promIdentifier    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords      = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "e"}
)

// metricNames returns the metric names a PromQL expression selects: its
// identifiers that are not functions, keywords, labels or ranges.
func metricNames(expr string) []string {
	s := promLabelMatchers.ReplaceAllString(expr, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdentifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " ")
		if strings.HasPrefix(rest, "(") || slices.Contains(promKeywords, name) {
			continue // a function call or an operator
		}
		if loc[0] > 0 && (s[loc[0]-1] == '.' || (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9')) {
			continue // part of a number such as 1e-9
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="y"}[$__rate_interval]))) / clamp_min(sum(b_total), 1e-9) > 0.05 and on (job) up`)
	if want := []string{"a_bucket", "b_total", "up"}; !slices.Equal(got, want) {
		t.Fatalf("metricNames = %v, want %v", got, want)
	}
}

// Every series a dashboard queries is one the service exports (or
// Prometheus's own `up`), so a renamed metric cannot leave a panel empty.
func TestGrafana_DashboardsQueryExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	exported["up"] = true
	for file, d := range loadDashboards(t) {
		queried := 0
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", file, p.Title)
			}
			for _, tg := range p.Targets {
				names := metricNames(tg.Expr)
				if len(names) == 0 {
					t.Errorf("%s: panel %q: query %q selects no metric", file, p.Title, tg.Expr)
				}
				for _, n := range names {
					queried++
					if !exported[n] {
						t.Errorf("%s: panel %q queries %s, which the service does not export", file, p.Title, n)
					}
				}
			}
		}
		for _, want := range []string{"webhooks_deliveries_total", "webhooks_delivery_attempt_duration_seconds_bucket", "webhooks_delivery_lag_seconds_bucket"} {
			if !strings.Contains(string(mustRead(t, file)), want) {
				t.Errorf("%s does not chart %s", file, want)
			}
		}
		if queried == 0 {
			t.Errorf("%s queries nothing", file)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The observability profile's Grafana gets the provisioning and dashboards
// mounted where the provisioning files say, and a datasource that reaches
// the compose Prometheus under the uid the panels use.
func TestGrafana_ProvisionedByTheObservabilityProfile(t *testing.T) {
	f := loadCompose(t, sampleEnv)
	g, ok := f.Services["grafana"]
	if !ok {
		t.Fatal("no grafana service")
	}
	if !slices.Contains(g.Profiles, "observability") {
		t.Errorf("grafana profiles = %v, want observability", g.Profiles)
	}
	mounts := map[string]string{} // container path -> host path
	for _, v := range g.Volumes {
		if v.Type == types.VolumeTypeBind {
			mounts[v.Target] = v.Source
		}
	}
	provisioning, err := filepath.Abs(filepath.Join(grafanaDir, "provisioning"))
	if err != nil {
		t.Fatal(err)
	}
	if mounts["/etc/grafana/provisioning"] != provisioning {
		t.Fatalf("grafana mounts %v; want deploy/grafana/provisioning at /etc/grafana/provisioning", mounts)
	}

	var providers struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	mustYAML(t, filepath.Join(grafanaDir, "provisioning", "dashboards", "webhooks.yml"), &providers)
	if len(providers.Providers) == 0 {
		t.Fatal("no dashboard provider")
	}
	for _, p := range providers.Providers {
		host, ok := mounts[p.Options.Path]
		if !ok {
			t.Errorf("dashboard provider reads %s, where nothing is mounted", p.Options.Path)
			continue
		}
		if files, _ := filepath.Glob(filepath.Join(host, "*.json")); len(files) == 0 {
			t.Errorf("dashboard provider path %s is mounted from %s, which holds no dashboard", p.Options.Path, host)
		}
	}

	var sources struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	mustYAML(t, filepath.Join(grafanaDir, "provisioning", "datasources", "prometheus.yml"), &sources)
	uids := map[string]bool{}
	for _, s := range sources.Datasources {
		uids[s.UID] = true
		u, err := url.Parse(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		prom, ok := f.Services[u.Hostname()]
		if !ok {
			t.Errorf("datasource %s points at %s, not a compose service", s.UID, s.URL)
			continue
		}
		if !slices.Contains(prom.Command, "--config.file=/etc/prometheus/prometheus.yml") || u.Port() != "9090" {
			t.Errorf("datasource %s URL %s is not Prometheus's port 9090", s.UID, s.URL)
		}
	}
	for file, d := range loadDashboards(t) {
		for _, p := range d.Panels {
			for _, ds := range append([]datasource{p.Datasource}, func() []datasource {
				var out []datasource
				for _, tg := range p.Targets {
					out = append(out, tg.Datasource)
				}
				return out
			}()...) {
				if ds.UID != "" && !uids[ds.UID] {
					t.Errorf("%s: panel %q uses datasource %q, which is not provisioned", file, p.Title, ds.UID)
				}
			}
		}
	}
}

func mustYAML(t *testing.T, path string, v any) {
	t.Helper()
	if err := yaml.Unmarshal(mustRead(t, path), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
