package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks/telemetry"
)

func TestRegisterBacklog_GaugesReadAtScrape(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "backlog", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	due, fail := int64(3), false
	err = telemetry.RegisterBacklog(tel.MeterProvider, func(context.Context) (int64, int64, error) {
		if fail {
			return 0, 0, errors.New("database down")
		}
		return due, 10, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{"\nwebhooks_deliveries_due 3\n", "\nwebhooks_deliveries_pending 10\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	due = 7
	if body := scrape(); !strings.Contains(body, "\nwebhooks_deliveries_due 7\n") {
		t.Error("the gauge was not read again at the next scrape")
	}
	fail = true
	if body := scrape(); strings.Contains(body, "\nwebhooks_deliveries_due ") {
		t.Error("a failed count was reported")
	}
}

func TestDeliveryMetrics_LateAnswers(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "late", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	tel.Delivery.LateAnswer(ctx, "job.run.completed", 200)
	tel.Delivery.LateAnswer(ctx, "job.run.completed", 204)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `webhooks_delivery_late_answers_total{event_type="job.run.completed",status_class="2xx"} 2`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("scrape lacks two 2xx late answers:\n%s", rec.Body.String())
	}
}

func TestBreakerMetrics_OpenGaugeAndTransitions(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "breakers", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	if err := telemetry.RegisterOpenBreakers(tel.MeterProvider, func(context.Context) (int64, error) { return 4, nil }); err != nil {
		t.Fatal(err)
	}
	tel.Delivery.BreakerTransition(ctx, true)
	tel.Delivery.BreakerTransition(ctx, true)
	tel.Delivery.BreakerTransition(ctx, false)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"\nwebhooks_breakers_open 4\n", `webhooks_breaker_transitions_total{`, `state="open"} 2`, `state="closed"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
