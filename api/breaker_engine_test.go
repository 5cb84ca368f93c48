package api_test

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
)

// capturedRequest is one request a loopback receiver got.
type capturedRequest struct {
	header http.Header
	body   []byte
}

// captureReceiver is a loopback receiver that answers status (changeable)
// and keeps every request.
type captureReceiver struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	got    []capturedRequest
}

func newCaptureReceiver(t *testing.T, status int) *captureReceiver {
	t.Helper()
	rc := &captureReceiver{}
	rc.status.Store(int32(status))
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, capturedRequest{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(int(rc.status.Load()))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *captureReceiver) requests() []capturedRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]capturedRequest(nil), rc.got...)
}

// waitFor polls cond every 100 ms until it holds or within fails.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBreaker_EndToEnd: with the real engine, a receiver that is down
// opens its webhook's breaker after two failed attempts; the account's
// notification endpoint gets a webhook.breaker_opened notice signed with
// the secret its PUT showed (Authorization and Standard Webhooks); the
// breaker object says open with the backlog; once the receiver is back,
// Probe now sends the held delivery at once (not after the hour-long
// backoff step), which closes the breaker, and the notice is listed as
// delivered.
func TestBreaker_EndToEnd(t *testing.T) {
	srv := testenv.StartTemporalServer(t, testenv.FreeAddress(t), "")
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	loopback := &netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	s := &incidentsAPI{subsAPI: &subsAPI{Box: box}}
	s.testAPI = newTestAPI(t, func(a *testAPI, d *api.Deps) {
		d.Subscriptions = mustNewSubscriptions(t, a.DB.Pool, box, loopback)
		e := enginetest.Start(t, a.DB.URL, a.DB.Pool, srv.Address, key, map[string]string{
			"DELIVERY_BREAKER_THRESHOLD":      "2",
			"DELIVERY_BREAKER_PROBE_FIRST":    "1h",
			"DELIVERY_BREAKER_PROBE_MAX":      "1h",
			"DELIVERY_RETRY_INITIAL_INTERVAL": "1s",
			"INCIDENT_NOTICE_AFTER":           "0s",
			"DELIVERY_ON_OUTAGE":              "hold",
		})
		setDelivery(a, d, e.Dispatch, e.Store)
	}, withIncidents(t, &s.Incidents, &box, loopback, nil))
	s.Store = s.DeliveryStore
	s.Account = s.mustCreateAccount(t, webhooks.PlanTeam)
	s.Writer = s.mustCreateUser(t, s.Account.ID, "developer", "member").Token

	notices := newCaptureReceiver(t, http.StatusNoContent)
	resp := doJSON(t, http.MethodPut, s.endpointURL(s.Account.ID), s.Writer, map[string]any{"url": notices.URL + "/notices"})
	requireStatus(t, resp, http.StatusCreated)
	var ep endpointItem
	resp.decodeData(t, &ep)
	noticeSecret := *ep.Secret

	receiver := newCaptureReceiver(t, http.StatusServiceUnavailable)
	body := validBody()
	body["client_url"], body["job_ids"] = receiver.URL+"/hook", []int{}
	sub := s.mustCreateSub(t, body)
	ingestRuns(t, s.Deps.Deliveries, s.Account.ID, 2)

	waitFor(t, 30*time.Second, "breaker open", func() bool { return s.mustGetBreaker(t, sub.ID).State == "open" })
	b := s.mustGetBreaker(t, sub.ID)
	if b.Backlog != 2 || b.FailuresInARow < 2 || b.OpenedAt == nil || microsTime(t, b.NextProbeAt).Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("open breaker = %+v", b)
	}

	// The notice, signed with the endpoint's secret.
	waitFor(t, 30*time.Second, "breaker_opened notice", func() bool { return len(notices.requests()) > 0 })
	n := notices.requests()[0]
	var nb webhooks.NoticeBody
	if err := json.Unmarshal(n.body, &nb); err != nil {
		t.Fatalf("notice body %s: %v", n.body, err)
	}
	if nb.Type != webhooks.NoticeBreakerOpened || nb.Webhook.ID != sub.ID || nb.Webhook.ClientURL != receiver.URL+"/hook" {
		t.Errorf("notice = %s", n.body)
	}
	if !webhooks.VerifySignature(noticeSecret, n.body, n.header.Get("Authorization")) {
		t.Error("the notice's Authorization is not the HMAC of its body under the endpoint's secret")
	}
	wh, err := standardwebhooks.NewWebhook(*ep.StandardSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(n.body, n.header); err != nil || n.header.Get("webhook-id") != nb.NoticeID {
		t.Errorf("Standard Webhooks verification: %v (webhook-id %q)", err, n.header.Get("webhook-id"))
	}

	// The receiver is back; Probe now sends the held delivery at once.
	receiver.status.Store(http.StatusOK)
	before := len(receiver.requests())
	resp = doJSON(t, http.MethodPost, s.subURL(s.Account.ID, sub.ID)+"/breaker/probe", s.Writer, nil)
	requireStatus(t, resp, http.StatusAccepted)
	waitFor(t, 30*time.Second, "the probe at the receiver", func() bool { return len(receiver.requests()) > before })
	waitFor(t, 30*time.Second, "breaker closed and drained", func() bool {
		b = s.mustGetBreaker(t, sub.ID)
		return b.State == "closed" && b.Backlog == 0
	})
	if b.LastClosedAt == nil || b.OpenedAt != nil || b.NextProbeAt != nil {
		t.Errorf("closed breaker = %+v", b)
	}

	resp = doJSON(t, http.MethodGet, s.webhooksURL(s.Account.ID)+"/notices", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	var listed []noticeItem
	resp.decodeData(t, &listed)
	if len(listed) == 0 || listed[len(listed)-1].ID != nb.NoticeID || listed[len(listed)-1].Status != "delivered" {
		t.Errorf("notices = %+v, want the breaker_opened notice, delivered", listed)
	}
}
