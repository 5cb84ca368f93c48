package telemetry

import (
	"context"
	"net/http"
	"net/url"
)

// OriginOnly wraps an instrumenting transport (otelhttp.NewTransport) so
// that it sees every request's URL cut down to its origin: scheme, host
// and port, without userinfo, path, query or fragment. A webhook's
// client_url carries customers' secrets in its path and query (tokens,
// signed URLs), and whatever the instrumentation sees goes into spans
// (url.full, the span name) and on to everyone who reads the traces. The
// transport beneath the instrumentation gets the whole URL back, so the
// request that goes out is the one that was made.
func OriginOnly(instrument func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return originOnly{next: instrument(wholeURL{next: rt})}
	}
}

// wholeURLKey holds, in the context of a request whose URL originOnly cut
// down, the URL it had.
type wholeURLKey struct{}

// originOnly hands the transport beneath it a copy of the request with
// only the URL's origin; the whole URL travels in the copy's context.
type originOnly struct{ next http.RoundTripper }

func (t originOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL == nil {
		return t.next.RoundTrip(r)
	}
	shown := r.WithContext(context.WithValue(r.Context(), wholeURLKey{}, r.URL)) // a shallow copy: r stays as it came
	shown.URL = &url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host}
	return t.next.RoundTrip(shown)
}

// wholeURL puts back the URL originOnly took away, below the
// instrumentation (which passes the context on to the request it hands
// down).
type wholeURL struct{ next http.RoundTripper }

func (t wholeURL) RoundTrip(r *http.Request) (*http.Response, error) {
	u, ok := r.Context().Value(wholeURLKey{}).(*url.URL)
	if !ok {
		return t.next.RoundTrip(r)
	}
	sent := r.WithContext(r.Context())
	sent.URL = u
	return t.next.RoundTrip(sent)
}
