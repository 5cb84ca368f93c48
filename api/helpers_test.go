package api_test

// Shared helpers for every black-box API test in this package: a real API on
// a real HTTP listener over a fresh, migrated PostgreSQL database, fixtures
// for accounts, users and service tokens, and a JSON client that decodes the
// response envelope.
//
//	a := newTestAPI(t)
//	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
//	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
//	resp := doJSON(t, "GET", a.URL+"/api/v2/accounts/", u.Token, nil)
//	requireStatus(t, resp, http.StatusOK)
//
// Areas that add dependencies to api.Deps pass an option:
//
//	a := newTestAPI(t, func(a *testAPI, d *api.Deps) { setDispatch(t, a, d, tc, a.DB.Pool) })

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/admin"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
)

// testAPI is one running API server for one test.
type testAPI struct {
	URL      string             // base URL, no trailing slash
	DB       *testenv.Database  // the test's own migrated database
	Identity *identity.Store    // for fixtures
	Config   config.Config      // defaults, DATABASE_URL = DB.URL
	Logs     *testenv.LogBuffer // everything the API logged (JSON lines)
	Server   *httptest.Server   // the listener, closed at cleanup
	Deps     api.Deps           // what NewServer was given
	seq      atomic.Int64       // makes fixture names unique

	// DeliveryStore is the store of Deps.Deliveries and Deps.DeliveryReads
	// (setDelivery), nil without them.
	DeliveryStore *deliveries.Store
}

// testAPIOption adjusts the dependencies before the server is built; a.DB,
// a.Identity, a.Config and a.Logs are already set when it runs.
type testAPIOption func(a *testAPI, deps *api.Deps)

// newTestAPI starts the API on a loopback listener over a fresh database.
// Everything is torn down when the test ends.
func newTestAPI(t testing.TB, opts ...testAPIOption) *testAPI {
	t.Helper()
	db := testenv.NewDatabase(t)
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	cfg.DatabaseURL = db.URL
	a := &testAPI{DB: db, Identity: identity.NewStore(db.Pool), Config: cfg, Logs: &testenv.LogBuffer{}}
	deps := api.Deps{
		Config:   cfg,
		Logger:   slog.New(slog.NewJSONHandler(a.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Identity: a.Identity,
		// The strict destination policy; withSubscriptions sets another.
		Subscriptions: mustNewSubscriptions(t, db.Pool, mustNewBox(t), &netguard.Policy{}),
		Readiness: []admin.Check{
			{Name: "postgres", Check: db.Pool.Ping},
		},
	}
	for _, opt := range opts {
		opt(a, &deps)
	}
	a.Deps = deps
	h, err := api.NewServer(deps)
	if err != nil {
		t.Fatalf("api.NewServer: %v", err)
	}
	a.Server = httptest.NewServer(h)
	a.URL = a.Server.URL
	t.Cleanup(a.Server.Close)
	return a
}

// uniqueName returns prefix with a per-API sequence number appended.
func (a *testAPI) uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, a.seq.Add(1))
}

// mustCreateAccount creates an account on plan (webhooks.PlanTeam, ...).
func (a *testAPI) mustCreateAccount(t testing.TB, plan string) webhooks.Account {
	t.Helper()
	acct, err := a.Identity.CreateAccount(context.Background(), a.uniqueName("account"), plan)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	return acct
}

// testUser is a user created by mustCreateUser, with its current API key.
type testUser struct {
	ID    int64
	Email string
	Token string
}

// mustCreateUser creates a user who is a member of accountID with license
// ("developer", "read_only", ...) and the given permission sets (at least one).
func (a *testAPI) mustCreateUser(t testing.TB, accountID int64, license string, permissionSets ...string) testUser {
	t.Helper()
	email := a.uniqueName("user") + "@example.com"
	id, token, err := a.Identity.CreateUser(context.Background(), identity.NewUser{
		AccountID: accountID, Email: email, License: license, PermissionSets: permissionSets,
	})
	if err != nil {
		t.Fatalf("create user: %v", err)
	}
	return testUser{ID: id, Email: email, Token: token}
}

// testServiceToken is a service token created by mustCreateServiceToken.
type testServiceToken struct {
	ID    int64
	Token string
}

// mustCreateServiceToken creates a service token of accountID.
func (a *testAPI) mustCreateServiceToken(t testing.TB, accountID int64, permissionSets ...string) testServiceToken {
	t.Helper()
	id, token, err := a.Identity.CreateServiceToken(context.Background(), accountID, a.uniqueName("token"), permissionSets)
	if err != nil {
		t.Fatalf("create service token: %v", err)
	}
	return testServiceToken{ID: id, Token: token}
}

// testEnvelope is the response envelope, with data left raw.
type testEnvelope struct {
	Data   json.RawMessage `json:"data"`
	Status struct {
		Code             int    `json:"code"`
		IsSuccess        bool   `json:"is_success"`
		UserMessage      string `json:"user_message"`
		DeveloperMessage string `json:"developer_message"`
	} `json:"status"`
	Extra json.RawMessage `json:"extra"`
}

// testResponse is a finished HTTP exchange.
type testResponse struct {
	Code   int
	Header http.Header
	Body   []byte
	Env    testEnvelope // zero when the body is not an envelope
}

// decodeData unmarshals the envelope's data into v, failing the test if it can't.
func (r *testResponse) decodeData(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Env.Data, v); err != nil {
		t.Fatalf("decode data %s: %v", r.Env.Data, err)
	}
}

var testHTTPClient = &http.Client{Timeout: 30 * time.Second}

// doJSON sends method url with "Authorization: Token <token>" (none when
// token is empty) and body: nil for none, string or []byte sent as is,
// anything else JSON encoded.
func doJSON(t testing.TB, method, url, token string, body any) *testResponse {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Token "+token)
	}
	return doRequest(t, method, url, h, body)
}

// doRequest is doJSON with explicit headers (for example another auth scheme).
// Every exchange is checked against api/openapi.json (checkExchange).
func doRequest(t testing.TB, method, url string, header http.Header, body any) *testResponse {
	t.Helper()
	var (
		r       io.Reader
		reqBody []byte       // the body, when known in advance
		tee     bytes.Buffer // a reader's body, as sent
		sent    = func() []byte { return reqBody }
	)
	switch b := body.(type) {
	case nil:
	case string:
		reqBody = []byte(b)
	case []byte:
		reqBody = b
	case io.Reader:
		r, sent = io.TeeReader(b, &tee), tee.Bytes
	default:
		var err error
		if reqBody, err = json.Marshal(b); err != nil {
			t.Fatalf("encode request body: %v", err)
		}
	}
	if reqBody != nil {
		r = bytes.NewReader(reqBody) // sent with its Content-Length
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if r != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := testHTTPClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	out := &testResponse{Code: resp.StatusCode, Header: resp.Header, Body: raw}
	_ = json.Unmarshal(raw, &out.Env)
	if err := checkExchange(method, url, req.Header, sent(), resp.StatusCode, resp.Header, raw); err != nil {
		t.Error(err)
	}
	return out
}

// requireStatus fails the test unless the response has HTTP status want and
// an envelope whose status.code mirrors it.
func requireStatus(t testing.TB, r *testResponse, want int) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("HTTP status = %d, want %d; body: %s", r.Code, want, r.Body)
	}
	if r.Env.Status.Code != want {
		t.Fatalf("status.code = %d, want %d; body: %s", r.Env.Status.Code, want, r.Body)
	}
	if success := want < 400; r.Env.Status.IsSuccess != success {
		t.Fatalf("status.is_success = %v, want %v; body: %s", r.Env.Status.IsSuccess, success, r.Body)
	}
}

// requireFieldRefused checks a 400 in the error envelope that names field
// (developer_message) and whose user_message says says.
func requireFieldRefused(t testing.TB, r *testResponse, field, says string) {
	t.Helper()
	requireErrorEnvelope(t, r, http.StatusBadRequest)
	if !strings.Contains(r.Env.Status.DeveloperMessage, `invalid field "`+field+`"`) {
		t.Errorf("developer_message %q does not name field %s", r.Env.Status.DeveloperMessage, field)
	}
	if !strings.Contains(r.Env.Status.UserMessage, says) {
		t.Errorf("user_message %q does not say %s", r.Env.Status.UserMessage, says)
	}
}

// requireErrorEnvelope fails the test unless the response is the error
// envelope with HTTP status want: data null, is_success false, both messages
// present.
func requireErrorEnvelope(t testing.TB, r *testResponse, want int) {
	t.Helper()
	requireStatus(t, r, want)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v; body: %s", err, r.Body)
	}
	if d, ok := top["data"]; !ok || string(d) != "null" {
		t.Fatalf("error envelope data = %s (present %v), want null; body: %s", d, ok, r.Body)
	}
	if r.Env.Status.UserMessage == "" || r.Env.Status.DeveloperMessage == "" {
		t.Fatalf("error envelope lacks user_message or developer_message; body: %s", r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
}
