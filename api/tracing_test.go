package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/telemetry"
)

// TestTracing_SpansHoldNoPathOrQuery: a request's server span names its
// route template, never the path it came on nor its query: a relay path
// carries the listener's relay token, which is all a worker needs to
// deliver to it, and spans go to everyone who reads the traces. The
// credential header is not recorded either.
func TestTracing_SpansHoldNoPathOrQuery(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{ServiceName: "api-tracing-test", SpanExporter: spans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	var box *secrets.Box
	a := newTestAPI(t, withListeners(t, &box, nil), func(_ *testAPI, d *api.Deps) { d.Telemetry = tel })

	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	credential := a.mustCreateUser(t, acct.ID, "developer", "member").Token
	subs := "/api/v3/accounts/" + strconv.FormatInt(acct.ID, 10) + "/webhooks/subscriptions"
	const (
		relayToken  = "whr_relaysecret0123456789"
		querySecret = "querysecret9876"
	)
	requests := []struct {
		name, method, path string
		status             int
		route              string // the span's http.route; "" when no route matched
		untraced           bool   // no server span at all
	}{
		{"Relay", http.MethodPost, "/relay/v1/" + relayToken, http.StatusNotFound, "/relay/v1/:token", false},
		{"RelayWithQuery", http.MethodPost, "/relay/v1/" + relayToken + "?token=" + querySecret, http.StatusNotFound, "/relay/v1/:token", false},
		{"NoRoute", http.MethodPost, "/relay/v1/" + relayToken + "/more?token=" + querySecret, http.StatusNotFound, "", false},
		// The handler still reads the query: limit=x is refused.
		{"HandlerSeesQuery", http.MethodGet, subs + "?limit=x&secret=" + querySecret, http.StatusBadRequest, "/api/v3/accounts/:account_id/webhooks/subscriptions", false},
		{"HealthIsNotTraced", http.MethodGet, "/healthz", http.StatusOK, "", true},
	}
	for _, r := range requests {
		t.Run(r.name, func(t *testing.T) {
			spans.Reset()
			req, err := http.NewRequest(r.method, a.URL+r.path, strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Token "+credential)
			resp, err := testHTTPClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != r.status {
				t.Errorf("HTTP status = %d, want %d", resp.StatusCode, r.status)
			}

			var server []tracetest.SpanStub
			for _, sp := range spans.GetSpans() {
				if sp.SpanKind == trace.SpanKindServer {
					server = append(server, sp)
				}
				for _, secret := range []string{relayToken, "relaysecret", querySecret, credential} {
					for _, text := range spanTexts(sp) {
						if strings.Contains(text, secret) {
							t.Errorf("span %q holds %q: %s", sp.Name, secret, text)
						}
					}
				}
			}
			if r.untraced {
				if len(server) != 0 {
					t.Errorf("%d server spans for /healthz, want none", len(server))
				}
				return
			}
			if len(server) != 1 {
				t.Fatalf("%d server spans, want 1", len(server))
			}
			route := ""
			for _, kv := range server[0].Attributes {
				if kv.Key == "http.route" {
					route = kv.Value.AsString()
				}
			}
			if route != r.route {
				t.Errorf("http.route = %q, want %q", route, r.route)
			}
		})
	}
}

// spanTexts is every text a span exports: its name, status, attributes
// and its events' and links' attributes, as "where: value".
func spanTexts(sp tracetest.SpanStub) []string {
	out := []string{"name: " + sp.Name, "status: " + sp.Status.Description}
	add := func(where string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			out = append(out, where+" "+string(kv.Key)+": "+kv.Value.Emit())
		}
	}
	add("attribute", sp.Attributes)
	for _, e := range sp.Events {
		out = append(out, "event: "+e.Name)
		add("event attribute", e.Attributes)
	}
	for _, l := range sp.Links {
		add("link attribute", l.Attributes)
	}
	return out
}
