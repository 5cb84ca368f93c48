package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/jobhooks/jobhooks/telemetry"
)

func setup(t *testing.T, opts telemetry.Options) *telemetry.Telemetry {
	t.Helper()
	if opts.ServiceName == "" {
		opts.ServiceName = "telemetry-test"
	}
	tel, err := telemetry.Setup(context.Background(), opts)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics status = %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestDeliveryMetrics_AppearOnMetricsEndpoint(t *testing.T) {
	tel := setup(t, telemetry.Options{})
	ctx := context.Background()
	tel.Delivery.AttemptFinished(ctx, telemetry.Attempt{EventType: "job.run.completed", Outcome: telemetry.AttemptHTTPError, Number: 1, Duration: 30 * time.Millisecond})
	tel.Delivery.AttemptFinished(ctx, telemetry.Attempt{EventType: "job.run.completed", Outcome: telemetry.AttemptSucceeded, Number: 2, Duration: 20 * time.Millisecond})
	tel.Delivery.DeliveryFinished(ctx, "job.run.completed", telemetry.DeliveryDelivered, 1500*time.Millisecond)

	body := scrape(t, tel)
	for _, want := range []string{
		`webhooks_delivery_attempts_total{event_type="job.run.completed",outcome="http_status"`,
		`webhooks_delivery_attempts_total{event_type="job.run.completed",outcome="success"`,
		`webhooks_delivery_attempt_duration_seconds_bucket{event_type="job.run.completed",outcome="success"`,
		`webhooks_delivery_retries_total{event_type="job.run.completed"`,
		`webhooks_deliveries_total{event_type="job.run.completed",outcome="delivered"`,
		`webhooks_delivery_lag_seconds_sum{event_type="job.run.completed"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^webhooks_delivery_retries_total\{[^}]*\} 1$`).MatchString(body) {
		t.Errorf("retries counter is not 1 after one retry:\n%s", grep(body, "webhooks_delivery_retries_total"))
	}
}

func TestDeliveryMetrics_NilRecordsNothing(t *testing.T) {
	var m *telemetry.DeliveryMetrics
	m.AttemptFinished(context.Background(), telemetry.Attempt{})
	m.DeliveryFinished(context.Background(), "job.run.started", telemetry.DeliveryFailed, 0)
}

func TestSetup_TraceExporterFromEnvironment(t *testing.T) {
	tests := []struct {
		name          string
		env           map[string]string
		wantRecording bool
	}{
		{"NothingSetExportsNowhere", nil, false},
		{"NoneExportsNowhere", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{"NothingExportedButASamplerAskedFor", map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, true},
		{"ConsoleForDebugging", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v) // autoexport reads the process environment
			}
			tel := setup(t, telemetry.Options{Getenv: func(k string) string { return tt.env[k] }})
			_, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "op")
			defer span.End()
			// Spans nobody exports are not recorded, but their ids still
			// reach the logs.
			if span.IsRecording() != tt.wantRecording || !span.SpanContext().TraceID().IsValid() {
				t.Errorf("recording %v, trace id %s; want recording %v and a valid trace id",
					span.IsRecording(), span.SpanContext().TraceID(), tt.wantRecording)
			}
		})
	}
	t.Run("UnknownExporterIsAnError", func(t *testing.T) {
		t.Setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
		_, err := telemetry.Setup(context.Background(), telemetry.Options{ServiceName: "x", Getenv: func(k string) string {
			if k == "OTEL_TRACES_EXPORTER" {
				return "carrier-pigeon"
			}
			return ""
		}})
		if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
			t.Fatalf("err = %v, want one naming OTEL_TRACES_EXPORTER", err)
		}
	})
}

func TestLogHandler_AddsTraceAndSpanIDs(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tel := setup(t, telemetry.Options{SpanExporter: exporter})
	var buf bytes.Buffer
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")

	ctx, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "op")
	logger.InfoContext(ctx, "inside a span")
	span.End()
	logger.Info("outside any span")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2: %q", len(lines), buf.String())
	}
	var inside, outside map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &inside)
	_ = json.Unmarshal([]byte(lines[1]), &outside)
	sc := span.SpanContext()
	if inside["trace_id"] != sc.TraceID().String() || inside["span_id"] != sc.SpanID().String() {
		t.Errorf("log inside span = %v, want trace_id %s span_id %s", inside, sc.TraceID(), sc.SpanID())
	}
	if inside["component"] != "test" {
		t.Errorf("WithAttrs lost: %v", inside)
	}
	if _, ok := outside["trace_id"]; ok {
		t.Errorf("log outside span has a trace_id: %v", outside)
	}
	if n := len(exporter.GetSpans()); n != 1 {
		t.Errorf("in-memory exporter got %d spans, want 1", n)
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
