package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/listeners"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
)

// listenAPI is an API that relays listeners, with a Team account and a
// writer.
type listenAPI struct {
	*testAPI
	Box     *secrets.Box
	Account webhooks.Account
	Writer  string
}

// relayBaseURL is where the test pretends workers reach the relay; the
// relay requests of the tests go to the test server itself.
const relayBaseURL = "http://relay.test"

// withListeners gives the API a listener service over pool (nil: the
// test's database) with the relay at relayBaseURL.
func withListeners(t testing.TB, box **secrets.Box, pool *pgxpool.Pool) testAPIOption {
	t.Helper()
	*box = mustNewBox(t)
	return func(a *testAPI, d *api.Deps) {
		if pool == nil {
			pool = a.DB.Pool
		}
		policy := &netguard.Policy{Internal: []string{webhooks.RelayPrefix(relayBaseURL)}}
		subs := mustNewSubscriptions(t, pool, *box, policy)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		svc, err := listeners.NewService(ctx, pool, *box, subs, listeners.Options{
			RelayBaseURL: relayBaseURL, AttemptTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		d.Subscriptions, d.Listeners = subs, svc
	}
}

func newListenAPI(t testing.TB) *listenAPI {
	t.Helper()
	s := &listenAPI{}
	s.testAPI = newTestAPI(t, withListeners(t, &s.Box, nil))
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
	return s
}

func (s *listenAPI) listenersURL(accountID int64) string {
	return s.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks/listeners"
}

type listenerItem struct {
	ID                     string `json:"id"`
	Name                   string `json:"name"`
	WebhookID              string `json:"webhook_id"`
	HMACSecret             string `json:"hmac_secret"`
	StandardWebhooksSecret string `json:"standard_webhooks_secret"`
	CreatedAt              string `json:"created_at"`
}

type attemptItem struct {
	ID             string              `json:"id"`
	DeliveryID     string              `json:"delivery_id"`
	EventType      string              `json:"event_type"`
	Attempt        int                 `json:"attempt"`
	Headers        map[string][]string `json:"headers"`
	BodyBase64     string              `json:"body_base64"`
	AnswerWithinMs int64               `json:"answer_within_ms"`
}

// mustOpen opens a listener called name as the writer.
func (s *listenAPI) mustOpen(t testing.TB, name string) listenerItem {
	t.Helper()
	resp := doJSON(t, http.MethodPost, s.listenersURL(s.Account.ID), s.Writer, map[string]any{"name": name})
	if resp.Code != http.StatusCreated && resp.Code != http.StatusOK {
		t.Fatalf("open listener: %d %s", resp.Code, resp.Body)
	}
	var l listenerItem
	resp.decodeData(t, &l)
	return l
}

// relayToken is the token of the listener's webhook's client_url.
func (s *listenAPI) relayToken(t testing.TB, l listenerItem) string {
	t.Helper()
	resp := doJSON(t, http.MethodGet, s.URL+"/api/v3/accounts/"+strconv.FormatInt(s.Account.ID, 10)+"/webhooks/subscription/"+l.WebhookID, s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var sub subItem
	resp.decodeData(t, &sub)
	token, ok := strings.CutPrefix(sub.ClientURL, webhooks.RelayPrefix(relayBaseURL))
	if !ok {
		t.Fatalf("listener webhook's client_url %q is not the relay", sub.ClientURL)
	}
	return token
}

// signedHeader is a worker's attempt header, signed with secret now.
func signedHeader(secret, deliveryID string, body []byte) http.Header {
	now := time.Now()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", webhooks.Sign(secret, body))
	h.Set("Webhook-Delivery-Id", deliveryID)
	h.Set("Webhook-Attempt", "1")
	h.Set("Webhook-Id", deliveryID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("Webhook-Signature", webhooks.SignStandard(secret, deliveryID, now, body))
	return h
}

// TestListeners_RelayRoundTrip: over HTTP, a listener opened and long
// polling gets the relayed attempt exactly, and its answer is the relay's
// answer to the worker.
func TestListeners_RelayRoundTrip(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "round trip")
	if !strings.HasPrefix(l.ID, webhooks.ListenerIDPrefix) || !strings.HasPrefix(l.WebhookID, webhooks.SubscriptionIDPrefix) || l.HMACSecret == "" ||
		l.StandardWebhooksSecret != webhooks.StandardWebhooksSecret(l.HMACSecret) {
		t.Fatalf("listener = %+v", l)
	}
	token := s.relayToken(t, l)
	polled := make(chan *testResponse, 1)
	go func() {
		polled <- doJSON(t, http.MethodGet, s.listenersURL(s.Account.ID)+"/"+l.ID+"/attempts/next?wait=10", s.Writer, nil)
	}()
	waitListening(t, s.DB.Pool, l.ID)
	body := []byte(`{"eventType":"job.run.started","accountId":1}`)
	relayed := make(chan *testResponse, 1)
	go func() {
		relayed <- doRequest(t, http.MethodPost, s.URL+"/relay/v1/"+token, signedHeader(l.HMACSecret, "wdl_00000000000000000000000001", body), body)
	}()
	resp := <-polled
	requireStatus(t, resp, http.StatusOK)
	var att attemptItem
	resp.decodeData(t, &att)
	got, _ := base64.StdEncoding.DecodeString(att.BodyBase64)
	if string(got) != string(body) || att.EventType != "job.run.started" || att.DeliveryID != "wdl_00000000000000000000000001" || att.AnswerWithinMs <= 0 {
		t.Fatalf("attempt = %+v", att)
	}
	if h := http.Header(att.Headers); !webhooks.VerifySignature(l.HMACSecret, got, h.Get("Authorization")) {
		t.Fatalf("attempt headers %v do not carry the signature", att.Headers)
	}
	answer := doJSON(t, http.MethodPost, s.listenersURL(s.Account.ID)+"/"+l.ID+"/attempts/"+att.ID+"/answer", s.Writer, map[string]any{
		"status_code": 201, "headers": map[string][]string{"content-type": {"text/plain; charset=utf-8"}}, "body_base64": base64.StdEncoding.EncodeToString([]byte("made")), "duration_ms": 4,
	})
	requireStatus(t, answer, http.StatusOK)
	r := <-relayed
	if r.Code != http.StatusCreated || string(r.Body) != "made" || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("relay answered %d %q (%s), want the local 201 made", r.Code, r.Body, r.Header.Get("Content-Type"))
	}
	// Opening the same name again is the same listener and webhook.
	again := doJSON(t, http.MethodPost, s.listenersURL(s.Account.ID), s.Writer, map[string]any{"name": "round trip"})
	requireStatus(t, again, http.StatusOK)
	var same listenerItem
	again.decodeData(t, &same)
	if same.ID != l.ID || same.WebhookID != l.WebhookID || same.HMACSecret != l.HMACSecret || again.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("reopened listener = %+v, want %+v", same, l)
	}
}

// waitListening waits until a long poll of the listener is under way.
func waitListening(t testing.TB, pool *pgxpool.Pool, listenerID string) {
	t.Helper()
	for range 250 {
		var polling bool
		if err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM webhook_listener_polls WHERE listener_id = $1 AND ended_at IS NULL AND polling_until > now())", listenerID).Scan(&polling); err != nil {
			t.Fatal(err)
		}
		if polling {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the listener never polled")
}

// TestRelay_RefusesWhatIsNotAGenuineDelivery: the relay needs no API
// credential, so every request must prove it is the webhook's delivery.
func TestRelay_RefusesWhatIsNotAGenuineDelivery(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "guarded")
	token := s.relayToken(t, l)
	body := []byte(`{"eventType":"job.run.started"}`)
	forged := signedHeader("not-the-secret", "wdl_00000000000000000000000001", body)
	tests := []struct {
		name   string
		token  string
		header http.Header
		code   int
	}{
		{"Unsigned", token, http.Header{"Content-Type": {"application/json"}}, http.StatusUnauthorized},
		{"ForgedSignature", token, forged, http.StatusUnauthorized},
		{"APITokenInstead", token, http.Header{"Authorization": {"Token " + s.Writer}}, http.StatusUnauthorized},
		{"UnknownToken", "whr_" + strings.Repeat("A", 43), signedHeader(l.HMACSecret, "wdl_00000000000000000000000001", body), http.StatusNotFound},
		// Signed, but nobody listens: the worker gets a 503 at once and
		// retries later.
		{"NobodyListening", token, signedHeader(l.HMACSecret, "wdl_00000000000000000000000001", body), http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doRequest(t, http.MethodPost, s.URL+"/relay/v1/"+tt.token, tt.header, body)
			requireErrorEnvelope(t, resp, tt.code)
		})
	}
}

// TestRelay_OverHTTP: a genuine delivery with odd text (a NUL in its
// eventType) reaches the listener; the local endpoint's directive comes back
// to the worker in the relay's answer; the same request again is a 409 in
// the envelope.
func TestRelay_OverHTTP(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "over http")
	token := s.relayToken(t, l)
	polled := make(chan *testResponse, 1)
	go func() {
		polled <- doJSON(t, http.MethodGet, s.listenersURL(s.Account.ID)+"/"+l.ID+"/attempts/next?wait=10", s.Writer, nil)
	}()
	waitListening(t, s.DB.Pool, l.ID)
	body := []byte(`{"eventType":"job.run.\u0000started","accountId":1}`)
	header := signedHeader(l.HMACSecret, "wdl_00000000000000000000000001", body)
	relayed := make(chan *testResponse, 1)
	go func() { relayed <- doRequest(t, http.MethodPost, s.URL+"/relay/v1/"+token, header, body) }()
	var resp *testResponse
	select {
	case resp = <-polled:
	case r := <-relayed:
		t.Fatalf("relay answered %d %s before the listener got the attempt", r.Code, r.Body)
	}
	requireStatus(t, resp, http.StatusOK)
	var att attemptItem
	resp.decodeData(t, &att)
	answer := doJSON(t, http.MethodPost, s.listenersURL(s.Account.ID)+"/"+l.ID+"/attempts/"+att.ID+"/answer", s.Writer, map[string]any{
		"status_code": 422, "headers": map[string][]string{"webhook-delivery": {"abort"}, "x-local": {"stays local"}}, "duration_ms": 3,
	})
	requireStatus(t, answer, http.StatusOK)
	r := <-relayed
	if r.Code != http.StatusUnprocessableEntity || r.Header.Get("Webhook-Delivery") != "abort" || r.Header.Get("X-Local") != "" {
		t.Fatalf("relay answered %d (Webhook-Delivery %q, X-Local %q), want the local 422 with Webhook-Delivery: abort only",
			r.Code, r.Header.Get("Webhook-Delivery"), r.Header.Get("X-Local"))
	}
	replay := doRequest(t, http.MethodPost, s.URL+"/relay/v1/"+token, header, body)
	requireErrorEnvelope(t, replay, http.StatusConflict)
}

// TestListeners_TooManyPollsIs429: a poll over the listener's bound is a
// 429 in the envelope, with Retry-After.
func TestListeners_TooManyPollsIs429(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "crowded")
	next := s.listenersURL(s.Account.ID) + "/" + l.ID + "/attempts/next?wait=3"
	open := make(chan *testResponse, listeners.DefaultPollsPerListener)
	for range listeners.DefaultPollsPerListener {
		go func() { open <- doJSON(t, http.MethodGet, next, s.Writer, nil) }()
	}
	for range 250 {
		var n int
		if err := s.DB.Pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_listener_polls WHERE listener_id = $1 AND ended_at IS NULL", l.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == listeners.DefaultPollsPerListener {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	over := doJSON(t, http.MethodGet, next, s.Writer, nil)
	requireErrorEnvelope(t, over, http.StatusTooManyRequests)
	if over.Header.Get("Retry-After") == "" {
		t.Fatal("a 429 without Retry-After")
	}
	for range listeners.DefaultPollsPerListener {
		requireStatus(t, <-open, http.StatusOK)
	}
}

// TestListeners_Permissions: opening, polling and answering need write
// access to the account's webhooks (spec 5.1), as creating a webhook does.
func TestListeners_Permissions(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "owned")
	devPlan := s.mustCreateAccount(t, webhooks.PlanDeveloper)
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	callers := []struct {
		name  string
		token string
		want  int // for the test account's listener routes
	}{
		{"DeveloperLicense", s.Writer, 0},
		{"ServiceTokenMember", s.mustCreateServiceToken(t, s.Account.ID, "member").Token, 0},
		{"ReadOnlyUser", s.mustCreateUser(t, s.Account.ID, "read_only", "read_only").Token, http.StatusForbidden},
		{"ServiceTokenReadOnly", s.mustCreateServiceToken(t, s.Account.ID, "read_only").Token, http.StatusForbidden},
		{"OtherAccountsUser", s.mustCreateUser(t, other.ID, "developer", "member").Token, http.StatusForbidden},
		{"DeveloperPlanMember", s.mustCreateUser(t, devPlan.ID, "developer", "member").Token, http.StatusForbidden},
		{"NoCredential", "", http.StatusUnauthorized},
	}
	base := s.listenersURL(s.Account.ID)
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			open := doJSON(t, http.MethodPost, base, c.token, map[string]any{"name": "caller " + c.name})
			next := doJSON(t, http.MethodGet, base+"/"+l.ID+"/attempts/next?wait=0", c.token, nil)
			answer := doJSON(t, http.MethodPost, base+"/"+l.ID+"/attempts/wla_unknown/answer", c.token, map[string]any{"status_code": 200})
			if c.want != 0 {
				for _, r := range []*testResponse{open, next, answer} {
					requireErrorEnvelope(t, r, c.want)
				}
				return
			}
			if open.Code != http.StatusCreated {
				t.Fatalf("open = %d %s", open.Code, open.Body)
			}
			requireStatus(t, next, http.StatusOK)
			if string(next.Env.Data) != "null" {
				t.Fatalf("next with nothing waiting = %s, want null", next.Env.Data)
			}
			requireErrorEnvelope(t, answer, http.StatusNotFound)
		})
	}
}

// TestListeners_OtherAccountsListenerIsNotFound: another account's listener
// id, in the caller's own account, gets exactly the answer of a listener
// that does not exist.
func TestListeners_OtherAccountsListenerIsNotFound(t *testing.T) {
	s := newListenAPI(t)
	theirs := s.mustOpen(t, "theirs")
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	token := s.mustCreateUser(t, other.ID, "developer", "member").Token
	base := s.listenersURL(other.ID)
	missing := webhooks.NewID(webhooks.ListenerIDPrefix)
	for _, route := range []struct {
		name, method, path string
		body               any
	}{
		{"Next", http.MethodGet, "/%s/attempts/next?wait=0", nil},
		{"Answer", http.MethodPost, "/%s/attempts/wla_x/answer", map[string]any{"status_code": 200}},
	} {
		t.Run(route.name, func(t *testing.T) {
			got := doJSON(t, route.method, base+strings.Replace(route.path, "%s", theirs.ID, 1), token, route.body)
			want := doJSON(t, route.method, base+strings.Replace(route.path, "%s", missing, 1), token, route.body)
			requireErrorEnvelope(t, got, http.StatusNotFound)
			requireErrorEnvelope(t, want, http.StatusNotFound)
			if got.Env.Status.UserMessage != want.Env.Status.UserMessage || got.Env.Status.DeveloperMessage != want.Env.Status.DeveloperMessage {
				t.Fatalf("another account's listener: %s; a missing one: %s", got.Body, want.Body)
			}
		})
	}
	// The same name in another account is another listener.
	resp := doJSON(t, http.MethodPost, base, token, map[string]any{"name": "theirs"})
	requireStatus(t, resp, http.StatusCreated)
	var mine listenerItem
	resp.decodeData(t, &mine)
	if mine.ID == theirs.ID || mine.WebhookID == theirs.WebhookID {
		t.Fatal("the same name in another account reused the first account's listener")
	}
}

// TestListeners_BadInputNamesTheField: every refused input is a 400 whose
// developer_message names the field or parameter.
func TestListeners_BadInputNamesTheField(t *testing.T) {
	s := newListenAPI(t)
	l := s.mustOpen(t, "inputs")
	base := s.listenersURL(s.Account.ID)
	answerURL := base + "/" + l.ID + "/attempts/wla_x/answer"
	tests := []struct {
		name, method, url string
		body              any
		field             string
	}{
		{"OpenWithoutName", http.MethodPost, base, map[string]any{}, "name"},
		{"OpenBlankName", http.MethodPost, base, map[string]any{"name": "  "}, "name"},
		{"OpenUnknownEvent", http.MethodPost, base, map[string]any{"name": "x", "event_types": []string{"job.run.paused"}}, "event_types"},
		{"OpenNoEvents", http.MethodPost, base, map[string]any{"name": "x", "event_types": []string{}}, "event_types"},
		{"OpenBadJob", http.MethodPost, base, map[string]any{"name": "x", "job_ids": []any{"seven"}}, "job_ids"},
		{"WaitNotANumber", http.MethodGet, base + "/" + l.ID + "/attempts/next?wait=soon", nil, "wait"},
		{"WaitTooLong", http.MethodGet, base + "/" + l.ID + "/attempts/next?wait=31", nil, "wait"},
		{"AnswerWithNothing", http.MethodPost, answerURL, map[string]any{}, "status_code"},
		{"AnswerStatusOutOfRange", http.MethodPost, answerURL, map[string]any{"status_code": 99}, "status_code"},
		{"AnswerBoth", http.MethodPost, answerURL, map[string]any{"status_code": 200, "error": "refused"}, "error"},
		{"AnswerBadBase64", http.MethodPost, answerURL, map[string]any{"status_code": 200, "body_base64": "%%%"}, "body_base64"},
		{"AnswerNegativeDuration", http.MethodPost, answerURL, map[string]any{"status_code": 200, "duration_ms": -1}, "duration_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, tt.method, tt.url, s.Writer, tt.body)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+tt.field+`"`) {
				t.Fatalf("developer_message %q does not name %q", resp.Env.Status.DeveloperMessage, tt.field)
			}
		})
	}
}

// TestListeners_UnavailableIs503: without listening configured, or with the
// database down, every listener route and the relay answer 503 with
// Retry-After, in the envelope.
func TestListeners_UnavailableIs503(t *testing.T) {
	setups := []struct {
		name string
		opt  func(t *testing.T, box **secrets.Box) testAPIOption
	}{
		{"NotConfigured", func(t *testing.T, box **secrets.Box) testAPIOption { return withSubscriptions(t, box, nil) }},
		{"DatabaseDown", func(t *testing.T, box **secrets.Box) testAPIOption { return withListeners(t, box, unreachablePool(t)) }},
	}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			s := &listenAPI{}
			s.testAPI = newTestAPI(t, setup.opt(t, &s.Box))
			s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
			s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token
			base := s.listenersURL(s.Account.ID)
			listener := webhooks.NewID(webhooks.ListenerIDPrefix)
			body, _ := json.Marshal(map[string]any{"eventType": "job.run.started"})
			for _, r := range []*testResponse{
				doJSON(t, http.MethodPost, base, s.Writer, map[string]any{"name": "down"}),
				doJSON(t, http.MethodGet, base+"/"+listener+"/attempts/next?wait=0", s.Writer, nil),
				doJSON(t, http.MethodPost, base+"/"+listener+"/attempts/wla_x/answer", s.Writer, map[string]any{"status_code": 200}),
				doRequest(t, http.MethodPost, s.URL+"/relay/v1/whr_x", signedHeader("secret", "wdl_00000000000000000000000001", body), body),
			} {
				requireUnavailable(t, r)
			}
		})
	}
}
