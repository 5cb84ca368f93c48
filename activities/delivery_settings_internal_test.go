package activities

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// fakeSettings is a SettingsSource that records its loads.
type fakeSettings struct {
	mu       sync.Mutex
	settings map[string]webhooksettings.Sending
	loads    [][]string
	err      error
	during   func() // runs inside each load
}

func (f *fakeSettings) ForSending(_ context.Context, ids []string) (map[string]webhooksettings.Sending, error) {
	f.mu.Lock()
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	f.loads = append(f.loads, sorted)
	during, err := f.during, f.err
	out := map[string]webhooksettings.Sending{}
	for _, id := range ids {
		if s, ok := f.settings[id]; ok {
			out[id] = s
		}
	}
	f.mu.Unlock()
	if during != nil {
		during()
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (f *fakeSettings) loadCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.loads)
}

// fakeClock is a clock tests move.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func rate(v float64) *float64 { return &v }

// TestSettingsCache: the webhooks a round asks for are read in one load;
// settings are reused for less than SettingsFreshFor and read again after;
// a failed load fails its attempts and is tried again; a load slower than
// SettingsFreshFor still answers.
func TestSettingsCache(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	src := &fakeSettings{settings: map[string]webhooksettings.Sending{"wsu_a": {MaxRequestsPerSecond: rate(5)}}}
	c := newSettingsCache(src, clock.now)
	ctx := context.Background()

	c.want("wsu_a")
	c.want("wsu_b")
	var wg sync.WaitGroup
	for _, id := range []string{"wsu_a", "wsu_b", "wsu_a"} {
		wg.Go(func() {
			if _, err := c.get(ctx, id); err != nil {
				t.Errorf("get %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	if src.loadCount() != 1 || !slices.Equal(src.loads[0], []string{"wsu_a", "wsu_b"}) {
		t.Fatalf("loads = %v, want one of both webhooks", src.loads)
	}
	s, _ := c.get(ctx, "wsu_a")
	if s.MaxRequestsPerSecond == nil || *s.MaxRequestsPerSecond != 5 {
		t.Errorf("wsu_a = %+v", s)
	}
	if s, _ := c.get(ctx, "wsu_b"); s.MaxRequestsPerSecond != nil || s.Headers != nil {
		t.Errorf("wsu_b without settings = %+v, want the defaults", s)
	}

	// A change is seen once the entry is SettingsFreshFor old, not before.
	src.mu.Lock()
	src.settings["wsu_a"] = webhooksettings.Sending{MaxRequestsPerSecond: rate(50)}
	src.mu.Unlock()
	clock.add(SettingsFreshFor - time.Millisecond)
	if s, _ := c.get(ctx, "wsu_a"); *s.MaxRequestsPerSecond != 5 || src.loadCount() != 1 {
		t.Fatalf("within SettingsFreshFor: %v after %d loads, want the cached 5", *s.MaxRequestsPerSecond, src.loadCount())
	}
	clock.add(time.Millisecond)
	if s, _ := c.get(ctx, "wsu_a"); *s.MaxRequestsPerSecond != 50 || src.loadCount() != 2 {
		t.Fatalf("after SettingsFreshFor: %v after %d loads, want 50 read again", *s.MaxRequestsPerSecond, src.loadCount())
	}

	// A failed load fails, and the next attempt reads again.
	clock.add(SettingsFreshFor)
	src.mu.Lock()
	src.err = errors.New("database down")
	src.mu.Unlock()
	if _, err := c.get(ctx, "wsu_a"); err == nil {
		t.Fatal("a failed load answered stale settings")
	}
	src.mu.Lock()
	src.err = nil
	src.mu.Unlock()
	if s, err := c.get(ctx, "wsu_a"); err != nil || *s.MaxRequestsPerSecond != 50 {
		t.Fatalf("after the outage: %+v, %v", s, err)
	}

	// A load that takes longer than SettingsFreshFor answers, once.
	clock.add(SettingsFreshFor)
	src.mu.Lock()
	src.during = func() { clock.add(3 * SettingsFreshFor) }
	src.mu.Unlock()
	before := src.loadCount()
	if _, err := c.get(ctx, "wsu_a"); err != nil || src.loadCount() != before+1 {
		t.Fatalf("slow load: %v after %d loads, want one", err, src.loadCount()-before)
	}
}

func TestMaxRequestsPerSecond(t *testing.T) {
	src := &fakeSettings{settings: map[string]webhooksettings.Sending{"wsu_limited": {MaxRequestsPerSecond: rate(0.5)}}}
	st := newSettingsState(SettingsDeps{Source: src}, time.Now, slog.New(slog.DiscardHandler))
	if v, ok, err := st.maxRequestsPerSecond(context.Background(), "wsu_limited"); err != nil || !ok || v != 0.5 {
		t.Errorf("limited = %v %v %v", v, ok, err)
	}
	if v, ok, err := st.maxRequestsPerSecond(context.Background(), "wsu_free"); err != nil || ok || v != 0 {
		t.Errorf("unlimited = %v %v %v", v, ok, err)
	}
}

// sealedTarget is a webhook whose hmac_secret box sealed.
func sealedTarget(t *testing.T, box *secrets.Box, id, secret string) deliveries.WebhookTarget {
	t.Helper()
	keyID, sealed := box.Seal(secret, id)
	return deliveries.WebhookTarget{ID: id, AccountID: 1, SecretKeyID: keyID, SecretCiphertext: sealed, SecretVersion: 1}
}

func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: make([]byte, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// capture is a loopback receiver that keeps the last request's headers.
func capture(t *testing.T) (*httptest.Server, func() http.Header) {
	t.Helper()
	var (
		mu   sync.Mutex
		last http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		last = r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() http.Header { mu.Lock(); defer mu.Unlock(); return last }
}

var loopback = &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// attemptHeaders posts as attemptClaimed does: signed, then the delivery
// headers.
func attemptHeaders(sign signer) func(http.Header) error {
	return func(h http.Header) error {
		if err := sign(h, "wdl_0123", []byte(`{}`)); err != nil {
			return err
		}
		h.Set(webhooks.HeaderDeliveryID, "wdl_0123")
		h.Set(webhooks.HeaderEventID, "wev_0123")
		h.Set(webhooks.HeaderAttempt, "1")
		return nil
	}
}

// TestSigner_AppliesCustomHeaders: custom headers go out with every
// attempt; none can replace what the service sets, not even one stored
// before a rule refused its name.
func TestSigner_AppliesCustomHeaders(t *testing.T) {
	box := testBox(t)
	target := sealedTarget(t, box, "wsu_headers", "the-hmac-secret")
	src := &fakeSettings{settings: map[string]webhooksettings.Sending{target.ID: {Headers: []webhooksettings.Header{
		{Name: "X-Team", Value: "data"},
		{Name: "X-Api-Key", Value: "opened secret", Secret: true},
		{Name: "Authorization", Value: "stolen"},
		{Name: "webhook-id", Value: "forged"},
		{Name: "Content-Type", Value: "text/plain"},
	}}}}
	s := New(Deps{Box: box, HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler),
		Settings: SettingsDeps{Source: src}}).Rounds.send
	srv, got := capture(t)
	r := s.post(context.Background(), 1, srv.URL, []byte(`{}`), attemptHeaders(s.signer(context.Background(), target)), nil, nil)
	if r.Kind != "" {
		t.Fatalf("attempt failed: %+v", r)
	}
	h := got()
	if h.Get("X-Team") != "data" || h.Get("X-Api-Key") != "opened secret" {
		t.Errorf("custom headers = %v", h)
	}
	if h.Get("Authorization") == "stolen" || h.Get("Webhook-Id") != "wdl_0123" || h.Get("Content-Type") != "application/json" {
		t.Errorf("a custom header replaced the service's: %v", h)
	}
	if len(h.Values("Authorization")) != 1 {
		t.Errorf("Authorization = %q", h.Values("Authorization"))
	}
	if _, leaked := h[clientCertificateKey]; leaked {
		t.Error("the internal certificate key went out")
	}
}

// TestSenderHeaders_AreReserved: every header an attempt carries that the
// service or the HTTP client sets is refused as a custom header name, so
// the list in webhooksettings stays in step with the sender.
func TestSenderHeaders_AreReserved(t *testing.T) {
	box := testBox(t)
	target := sealedTarget(t, box, "wsu_reserved", "s")
	s := New(Deps{Box: box, HTTP: NewHTTPClient(loopback, 5*time.Second, nil), Logger: slog.New(slog.DiscardHandler)}).Rounds.send
	srv, got := capture(t)
	if r := s.post(context.Background(), 1, srv.URL, []byte(`{}`), attemptHeaders(s.signer(context.Background(), target)), nil, nil); r.Kind != "" {
		t.Fatalf("attempt failed: %+v", r)
	}
	// The receiver's server adds none; Accept-Encoding is the client's
	// default, which a custom header may replace.
	sent := []string{"Host", "Content-Length"}
	for name := range got() {
		sent = append(sent, name)
	}
	for _, name := range sent {
		if name == "Accept-Encoding" {
			continue
		}
		if webhooksettings.Reserved(name) == "" {
			t.Errorf("the sender sets %s, but it may be configured as a custom header", name)
		}
	}
}

// TestPost_ClientCertificate: against a receiver that requires a client
// certificate from its CA, an attempt with the webhook's certificate gets
// through; without one, or with another CA's, it fails and says why.
func TestPost_ClientCertificate(t *testing.T) {
	serverCA, clientCA, otherCA := testcerts.NewCA(t, "Server CA"), testcerts.NewCA(t, "Client CA"), testcerts.NewCA(t, "Other CA")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = serverCA.ServerTLS(t, clientCA)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := &tls.Config{RootCAs: serverCA.Pool()}
	sending := func(ca *testcerts.CA) webhooksettings.Sending {
		certPEM, keyPEM := ca.Issue(t, testcerts.Leaf{CommonName: "webhook client"})
		parsed, e := webhooksettings.ParseCertificate(certPEM, keyPEM, time.Now())
		if e != nil {
			t.Fatal(e)
		}
		return webhooksettings.Sending{Certificate: &webhooksettings.ClientCertificate{SHA256: parsed.Info.SHA256, ChainPEM: certPEM, KeyPEM: keyPEM}}
	}
	src := &fakeSettings{settings: map[string]webhooksettings.Sending{"wsu_cert": sending(clientCA), "wsu_other": sending(otherCA)}}
	s := New(Deps{HTTP: NewHTTPClientTLS(loopback, 5*time.Second, nil, roots), Logger: slog.New(slog.DiscardHandler),
		Settings: SettingsDeps{Source: src, HTTPWithCertificate: func(c tls.Certificate) *http.Client {
			return NewHTTPClientTLS(loopback, 5*time.Second, nil, WithClientCertificate(roots, c))
		}}}).Rounds.send
	tests := []struct {
		webhook  string
		wantCode int
		says     []string
	}{
		{"wsu_cert", http.StatusNoContent, nil},
		{"wsu_none", 0, []string{"refused the TLS handshake", "certificate", "presents no client certificate"}},
		{"wsu_other", 0, []string{"refused the TLS handshake", "did not accept this webhook's client certificate", src.settings["wsu_other"].Certificate.SHA256}},
	}
	for _, tt := range tests {
		t.Run(tt.webhook, func(t *testing.T) {
			r := s.post(context.Background(), 1, srv.URL, []byte(`{}`), func(h http.Header) error {
				return s.applySettings(context.Background(), tt.webhook, h)
			}, nil, nil)
			if r.StatusCode != tt.wantCode {
				t.Fatalf("attempt = %+v, want status %d", r, tt.wantCode)
			}
			if tt.says == nil {
				if r.Kind != "" {
					t.Fatalf("attempt failed: %+v", r)
				}
				return
			}
			t.Logf("recorded error: %s", r.Message)
			if r.Kind != deliveries.KindConnection {
				t.Errorf("kind = %q, want connection", r.Kind)
			}
			for _, s := range tt.says {
				if !strings.Contains(r.Message, s) {
					t.Errorf("message %q does not say %q", r.Message, s)
				}
			}
		})
	}
}
