package telemetry_test

import (
	"net/http"
	"testing"

	"github.com/jobhooks/jobhooks/telemetry"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOriginOnly_InstrumentationSeesTheOriginAndTheRequestGoesWhole: the
// instrumenting transport sees scheme, host and port only; the transport
// beneath it gets the URL it was given, and the caller's request is left as
// it came.
func TestOriginOnly_InstrumentationSeesTheOriginAndTheRequestGoesWhole(t *testing.T) {
	const whole = "https://user:pw@hooks.example:8443/t/secret?token=secret#secret"
	var seen, sent string
	instrument := func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen = r.URL.String()
			return next.RoundTrip(r.Clone(r.Context())) // as otelhttp does
		})
	}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.URL.String()
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})
	req, err := http.NewRequest(http.MethodPost, whole, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := telemetry.OriginOnly(instrument)(base).RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if want := "https://hooks.example:8443"; seen != want {
		t.Errorf("the instrumentation saw %q, want %q", seen, want)
	}
	if sent != whole {
		t.Errorf("the transport beneath got %q, want %q", sent, whole)
	}
	if got := req.URL.String(); got != whole {
		t.Errorf("the caller's request now has %q, want it left as %q", got, whole)
	}
}
