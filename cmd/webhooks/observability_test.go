package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/telemetry"
	"github.com/jobhooks/jobhooks/worker"
)

// instrumentedStack is the API and the worker wired as serve and worker wire
// them, in-process, sharing one Telemetry with an in-memory span exporter.
type instrumentedStack struct {
	spans    *tracetest.InMemoryExporter
	tel      *telemetry.Telemetry
	apiURL   string
	internal string
	token    string
	account  int64
}

func startInstrumentedStack(t *testing.T) *instrumentedStack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	temporal := testenv.StartTemporalServer(t, testenv.FreeAddress(t), "")
	database := testenv.NewDatabase(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	internalToken := "whi_" + base64.RawURLEncoding.EncodeToString(key)
	vars := map[string]string{
		"DATABASE_URL":            database.URL,
		"TEMPORAL_ADDRESS":        temporal.Address,
		"TEMPORAL_TASK_QUEUE":     testenv.NewTaskQueue(t),
		"SECRET_ENCRYPTION_KEYS":  "t1:" + base64.StdEncoding.EncodeToString(key),
		"INTERNAL_API_TOKEN":      internalToken,
		"DESTINATION_ALLOW_CIDRS": "127.0.0.0/8",
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	s := &instrumentedStack{spans: tracetest.NewInMemoryExporter(), internal: internalToken}
	s.tel, err = telemetry.Setup(ctx, telemetry.Options{ServiceName: "observability-test", SpanExporter: s.spans})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(telemetry.LogHandler(slog.NewTextHandler(io.Discard, nil)))
	pool, err := openTracedDatabase(ctx, cfg, s.tel)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := dialTemporal(cfg, logger, s.tel, false)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	workerDone := make(chan error, 1)
	deps := workerDeps(cfg, logger, pool, tc, s.tel)
	deps.Ready = ready
	go func() { workerDone <- worker.Run(ctx, deps) }()
	apiDependencies, err := apiDeps(context.Background(), cfg, logger, pool, tc, s.tel)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := api.NewServer(apiDependencies)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	s.apiURL = srv.URL
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-workerDone; err != nil {
			t.Errorf("worker: %v", err)
		}
		tc.Close()
		pool.Close()
		_ = s.tel.Shutdown(context.Background())
	})
	select {
	case <-ready:
	case err := <-workerDone:
		t.Fatalf("worker stopped before polling: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("worker not polling after a minute")
	}

	store := identity.NewStore(database.Pool)
	acct, err := store.CreateAccount(ctx, "Observability", "team")
	if err != nil {
		t.Fatal(err)
	}
	if _, s.token, err = store.CreateServiceToken(ctx, acct.ID, "observability", []string{"account_admin"}); err != nil {
		t.Fatal(err)
	}
	s.account = acct.ID
	return s
}

func (s *instrumentedStack) call(t *testing.T, method, path, auth string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.apiURL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// arrival is one delivery the receiver got.
type arrival struct {
	header http.Header
}

func startReceiver(t *testing.T) (string, <-chan arrival) {
	t.Helper()
	got := make(chan arrival, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- arrival{header: r.Header.Clone()}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", got
}

func (s *instrumentedStack) ingestOne(t *testing.T, callerID string) {
	t.Helper()
	s.call(t, http.MethodPost, "/internal/v1/job-run-events", "Bearer "+s.internal, map[string]any{
		"accountId": s.account, "eventType": "job.run.started", "eventId": callerID,
		"data": map[string]any{
			"jobId": "1", "jobName": "Nightly", "runId": "100", "environmentId": "2", "environmentName": "Prod",
			"toolVersion": "1.9.0", "projectName": "P", "projectId": "3", "runStatus": "Running", "runStatusCode": 3,
			"runStatusMessage": "None", "runReason": "scheduled", "runStartedAt": "2026-01-01T00:00:00Z",
		},
	})
}

func TestObservability_OneTraceFromIngestionToOutboundRequest(t *testing.T) {
	s := startInstrumentedStack(t)
	url, arrivals := startReceiver(t)
	s.call(t, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", s.account), "Token "+s.token, map[string]any{
		"name": "traced", "client_url": url, "active": true, "event_types": []string{"job.run.started"}, "job_ids": []int{},
	})
	s.ingestOne(t, "trace-1")

	var got arrival
	select {
	case got = <-arrivals:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within 60s")
	}
	if tp := got.header.Get("Traceparent"); tp != "" {
		t.Errorf("receiver got traceparent %q; deliveries must not carry our trace context", tp)
	}

	// The client span ends when the response body is closed, just after the
	// receiver answered: poll briefly for it.
	var ingest, outbound []trace.SpanContext
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ingest, outbound = nil, nil
		for _, sp := range s.spans.GetSpans() {
			switch {
			case sp.SpanKind == trace.SpanKindServer && strings.Contains(sp.Name, "/internal/v1/job-run-events"):
				ingest = append(ingest, sp.SpanContext)
			case sp.SpanKind == trace.SpanKindClient && strings.HasPrefix(sp.Name, "deliver "):
				outbound = append(outbound, sp.SpanContext)
			}
		}
		if len(ingest) > 0 && len(outbound) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(ingest) != 1 || len(outbound) != 1 {
		t.Fatalf("found %d ingestion server spans and %d outbound client spans, want 1 and 1; spans: %s", len(ingest), len(outbound), spanNames(s.spans))
	}
	if ingest[0].TraceID() != outbound[0].TraceID() {
		t.Fatalf("ingestion trace %s, outbound request trace %s: want one trace", ingest[0].TraceID(), outbound[0].TraceID())
	}
	// The attempt's span is in the ingestion's trace too (the shard round
	// that made it is linked); spans end after the receiver answered, so
	// poll (bounded) until they are exported.
	wanted := []string{"AttemptDelivery", "deliver POST"}
	var joined string
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var inTrace []string
		for _, sp := range s.spans.GetSpans() {
			if sp.SpanContext.TraceID() == ingest[0].TraceID() {
				inTrace = append(inTrace, sp.Name)
			}
		}
		joined = strings.Join(inTrace, " | ")
		missing = missing[:0]
		for _, want := range wanted {
			if !strings.Contains(joined, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("one trace: %s", joined)
	for _, want := range missing {
		t.Errorf("trace lacks a %q span; it has: %s", want, joined)
	}
	// The attempt links to the shard round (a trace of its own) that made it.
	rounds := map[trace.TraceID]bool{}
	for _, sp := range s.spans.GetSpans() {
		if strings.HasSuffix(sp.Name, "Activity:DeliverShardRound") {
			rounds[sp.SpanContext.TraceID()] = true
		}
	}
	for _, sp := range s.spans.GetSpans() {
		if sp.Name != "AttemptDelivery" {
			continue
		}
		if len(sp.Links) != 1 || !rounds[sp.Links[0].SpanContext.TraceID()] {
			t.Errorf("AttemptDelivery links %v; want the shard round (DeliverShardRound); spans: %s", sp.Links, spanNames(s.spans))
		}
	}
}

func TestObservability_MetricsCountDeliveries(t *testing.T) {
	s := startInstrumentedStack(t)
	url, arrivals := startReceiver(t)
	s.call(t, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", s.account), "Token "+s.token, map[string]any{
		"name": "measured", "client_url": url, "active": true, "event_types": []string{"job.run.started"}, "job_ids": []int{},
	})
	const events = 3
	for i := range events {
		s.ingestOne(t, fmt.Sprintf("metrics-%d", i))
	}
	for range events {
		select {
		case <-arrivals:
		case <-time.After(60 * time.Second):
			t.Fatal("deliveries did not all arrive within 60s")
		}
	}
	// The attempt is observed right after the receiver answers.
	want := map[string]string{
		"attempts":   `webhooks_delivery_attempts_total{event_type="job.run.started",outcome="success"} 3`,
		"deliveries": `webhooks_deliveries_total{event_type="job.run.started",outcome="delivered"} 3`,
		"duration":   `webhooks_delivery_attempt_duration_seconds_count{event_type="job.run.started",outcome="success"} 3`,
		"lag":        `webhooks_delivery_lag_seconds_count{event_type="job.run.started"} 3`,
	}
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		body = scrapeMetrics(t, s.tel)
		complete := true
		for _, line := range want {
			complete = complete && strings.Contains(body, line)
		}
		if complete {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for name, line := range want {
		if !strings.Contains(body, line) {
			t.Errorf("%s: /metrics lacks %s", name, line)
		}
	}
	for _, family := range []string{"http_server_request_duration_seconds", "http_client_request_duration_seconds", "temporal_request", "temporal_local_activity_total", "temporal_workflow_task_schedule_to_start_latency_seconds", "webhooks_deliveries_due", "webhooks_deliveries_pending", "pgxpool_acquired_connections", "go_goroutines"} {
		if !strings.Contains(body, family) {
			t.Errorf("/metrics lacks the %s family", family)
		}
	}
}

var scrapeMu sync.Mutex

func scrapeMetrics(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	scrapeMu.Lock()
	defer scrapeMu.Unlock()
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func spanNames(e *tracetest.InMemoryExporter) string {
	var names []string
	for _, sp := range e.GetSpans() {
		names = append(names, fmt.Sprintf("%s[%s]", sp.Name, sp.SpanContext.TraceID().String()[:8]))
	}
	return strings.Join(names, ", ")
}
