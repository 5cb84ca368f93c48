package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/telemetry"
)

// newSpanRecorder is a Telemetry whose spans go to an in-memory exporter,
// synchronously.
func newSpanRecorder(t *testing.T) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{ServiceName: "tracing-secrets-test", SpanExporter: spans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, spans
}

// requireNoSecretInSpans fails the test if any span's name, attribute,
// status, event or link attribute holds one of secrets.
func requireNoSecretInSpans(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	check := func(span, where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("span %q: %s %q holds the secret %q", span, where, text, s)
			}
		}
	}
	checkAttrs := func(span, where string, attrs []attribute.KeyValue) {
		for _, a := range attrs {
			check(span, where+" "+string(a.Key), a.Value.Emit())
		}
	}
	for _, sp := range spans {
		check(sp.Name, "name", sp.Name)
		check(sp.Name, "status", sp.Status.Description)
		checkAttrs(sp.Name, "attribute", sp.Attributes)
		for _, e := range sp.Events {
			check(sp.Name, "event", e.Name)
			checkAttrs(sp.Name, "event attribute", e.Attributes)
		}
		for _, l := range sp.Links {
			checkAttrs(sp.Name, "link attribute", l.Attributes)
		}
	}
}

// TestDeliveryTransport_SpansCarryOnlyTheOrigin: a delivery's client span
// names the destination by scheme, host and port only. A client_url's
// userinfo, path, query and fragment hold customers' secrets and must not
// reach traces, whether the receiver answers or cannot be reached; the
// receiver still gets the whole URL.
func TestDeliveryTransport_SpansCarryOnlyTheOrigin(t *testing.T) {
	var (
		mu       sync.Mutex
		received []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		received = append(received, user+":"+pass+" "+r.URL.RequestURI())
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := closed.Addr().String()
	_ = closed.Close()

	secrets := []string{"hook-user", "pw-secret", "path-secret", "query-secret", "fragment-secret"}
	const rest = "/hooks/path-secret/x?token=query-secret&a=1#fragment-secret"
	for _, tc := range []struct{ name, host string }{
		{"Answered", strings.TrimPrefix(receiver.URL, "http://")},
		{"Unreachable", refusing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, spans := newSpanRecorder(t)
			policy := &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
			hc := activities.NewHTTPClient(policy, 5*time.Second, deliveryTransport(tel))
			req, err := http.NewRequest(http.MethodPost, "http://hook-user:pw-secret@"+tc.host+rest, bytes.NewReader([]byte(`{}`)))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err == nil {
				_ = resp.Body.Close() // ends the client span
			}
			if tc.name == "Answered" {
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				got := received
				mu.Unlock()
				if want := "hook-user:pw-secret /hooks/path-secret/x?token=query-secret&a=1"; len(got) != 1 || got[0] != want {
					t.Fatalf("receiver got %q, want [%q]: the request must go out whole", got, want)
				}
			} else if err == nil {
				t.Fatal("a request to a closed port succeeded")
			}

			all := spans.GetSpans()
			var client []tracetest.SpanStub
			for _, sp := range all {
				if sp.SpanKind == trace.SpanKindClient {
					client = append(client, sp)
				}
			}
			if len(client) != 1 {
				t.Fatalf("%d client spans, want 1: %v", len(client), all)
			}
			requireNoSecretInSpans(t, all, secrets...)
			var full string
			for _, a := range client[0].Attributes {
				if a.Key == "url.full" || a.Key == "http.url" {
					full = a.Value.Emit()
				}
			}
			if want := "http://" + tc.host; full != want {
				t.Errorf("url.full = %q, want %q (scheme, host and port only)", full, want)
			}
		})
	}
}
