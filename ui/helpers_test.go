package ui_test

// Shared helpers for the UI's black-box tests: the real API server (with the
// UI mounted exactly as the binary mounts it) over a fresh PostgreSQL
// database, fixtures, and a browser-like client with a cookie jar that does
// not follow redirects, so tests can assert them.

import (
	"crypto/rand"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/netguard/netguardtest"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/ui"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

var temporalAddr string

func TestMain(m *testing.M) {
	addr, stop := testenv.StartTemporal(m)
	temporalAddr = addr
	code := m.Run()
	stop()
	os.Exit(code)
}

type testUI struct {
	URL      string
	DB       *testenv.Database
	Identity *identity.Store
	Box      *secrets.Box
	Logs     *testenv.LogBuffer
	Store    *deliveries.Store // set by withDeliveries and withRecordedDeliveries
	boxKey   []byte            // the Box's only key, id "k1"
	seq      atomic.Int64
}

// withDeliveries gives the UI the real delivery engine: a Temporal client
// and an in-process worker on the test's own task queue, allowed to deliver
// to loopback receivers.
func withDeliveries(t *testing.T) uiOption {
	return func(tu *testUI, d *ui.Deps) {
		t.Helper()
		engine := enginetest.Start(t, tu.DB.URL, tu.DB.Pool, temporalAddr, tu.boxKey, nil)
		tu.Store, d.Deliveries, d.DeliveryReads = engine.Store, engine.Dispatch, deliveryreads.NewService(engine.Store)
	}
}

// uiOption adjusts the UI's dependencies before it is built.
type uiOption func(t *testUI, d *ui.Deps)

func newTestUI(t *testing.T, opts ...uiOption) *testUI {
	t.Helper()
	db := testenv.NewDatabase(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	tu := &testUI{DB: db, Identity: identity.NewStore(db.Pool), Box: box, Logs: &testenv.LogBuffer{}, boxKey: key}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("UI logs:\n%s", tu.Logs.String())
		}
	})
	logger := slog.New(slog.NewJSONHandler(tu.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Loopback receivers are allowed, as in dev mode; private ranges not.
	subs, err := subscriptions.NewService(subscriptions.NewStore(db.Pool, box), &netguard.Policy{
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Resolver: netguardtest.Resolver(t, map[string][]netip.Addr{
			"hooks.example.com":    {netip.MustParseAddr("93.184.215.14")},
			"internal.example.com": {netip.MustParseAddr("10.0.0.8")},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	settings, err := webhooksettings.NewService(webhooksettings.NewStore(db.Pool, box))
	if err != nil {
		t.Fatal(err)
	}
	deps := ui.Deps{Identity: tu.Identity, Box: box, Logger: logger, Subscriptions: subs, DeliverySettings: settings}
	for _, o := range opts {
		o(tu, &deps)
	}
	u, err := ui.New(deps)
	if err != nil {
		t.Fatalf("ui.New: %v", err)
	}
	h, err := api.NewServer(api.Deps{Logger: logger, Identity: tu.Identity, Subscriptions: subs, DeliverySettings: settings, UI: u})
	if err != nil {
		t.Fatalf("api.NewServer: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tu.URL = srv.URL
	return tu
}

type fixtureUser struct {
	ID      int64
	Email   string
	Token   string
	Account webhooks.Account
}

func (tu *testUI) mustCreateAccount(t *testing.T, plan string) webhooks.Account {
	t.Helper()
	a, err := tu.Identity.CreateAccount(t.Context(), fmt.Sprintf("Acme %d", tu.seq.Add(1)), plan)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (tu *testUI) mustCreateUser(t *testing.T, a webhooks.Account, license string, sets ...string) fixtureUser {
	t.Helper()
	email := fmt.Sprintf("user%d@example.com", tu.seq.Add(1))
	id, token, err := tu.Identity.CreateUser(t.Context(), identity.NewUser{
		AccountID: a.ID, Email: email, License: license, PermissionSets: sets,
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixtureUser{ID: id, Email: email, Token: token, Account: a}
}

func (tu *testUI) mustCreateServiceToken(t *testing.T, a webhooks.Account, sets ...string) string {
	t.Helper()
	_, token, err := tu.Identity.CreateServiceToken(t.Context(), a.ID, "ci", sets)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// browser is an HTTP client with cookies that reports redirects instead of
// following them.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (tu *testUI) newBrowser(t *testing.T) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: tu.URL, c: &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

type page struct {
	Code     int
	Location string
	Body     string
	Header   http.Header
	Cookies  []*http.Cookie
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{Code: resp.StatusCode, Location: resp.Header.Get("Location"), Body: string(body), Header: resp.Header, Cookies: resp.Cookies()}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// signIn signs the browser in through the sign-in form.
func (b *browser) signIn(token string) page {
	b.t.Helper()
	form := b.get("/ui/sign-in")
	requireCode(b.t, form, http.StatusOK)
	return b.post("/ui/sign-in", url.Values{"csrf_token": {csrfOf(b.t, form)}, "token": {token}})
}

func (b *browser) mustSignIn(token string) {
	b.t.Helper()
	p := b.signIn(token)
	if p.Code != http.StatusSeeOther {
		b.t.Fatalf("sign in: status %d, body:\n%s", p.Code, p.Body)
	}
}

var csrfPattern = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrfOf returns the CSRF token of the first form on p.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfPattern.FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no csrf_token on the page:\n%s", p.Body)
	}
	return html.UnescapeString(m[1])
}

func requireCode(t *testing.T, p page, want int) {
	t.Helper()
	if p.Code != want {
		t.Fatalf("status = %d, want %d (Location %q); body:\n%s", p.Code, want, p.Location, p.Body)
	}
}

func requireRedirect(t *testing.T, p page, wantPrefix string) {
	t.Helper()
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, wantPrefix) {
		t.Fatalf("got %d to %q, want 303 to %s...; body:\n%s", p.Code, p.Location, wantPrefix, p.Body)
	}
}

func requireContains(t *testing.T, p page, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !strings.Contains(p.Body, s) {
			t.Fatalf("page does not contain %q:\n%s", s, p.Body)
		}
	}
}

func requireNotContains(t *testing.T, p page, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(p.Body, s) {
			t.Fatalf("page contains %q but must not:\n%s", s, p.Body)
		}
	}
}
