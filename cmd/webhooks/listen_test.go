package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
)

// TestListen_RelaysDeliveriesEndToEnd: `webhooks listen` receives a
// webhook's deliveries through the API's relay, with no inbound port and
// with the destination policy refusing loopback, and the deliveries are
// signed, recorded and retried as for any webhook.
func TestListen_RelaysDeliveriesEndToEnd(t *testing.T) {
	s := startListenStack(t)

	t.Run("JobRunEventArrivesExactAndSigned", func(t *testing.T) {
		account, token := s.newAccount(t)
		local := startLocalReceiver(t, func(int) int { return http.StatusAccepted })
		l := s.startListen(t, s.apiB, token, account, "laptop", local.url)
		sent := s.emit(t, account, 42)
		got := local.next(t)
		t.Logf("relay latency, job-run event accepted -> local receiver: %s", got.at.Sub(sent).Round(time.Millisecond))

		requireSignedDelivery(t, got, l.secret)
		var payload struct {
			EventType   string `json:"eventType"`
			WebhooksID  string `json:"webhooksID"`
			WebhookName string `json:"webhookName"`
		}
		if err := json.Unmarshal(got.body, &payload); err != nil || payload.EventType != webhooks.EventRunCompleted ||
			payload.WebhooksID != l.webhookID || payload.WebhookName != "laptop" {
			t.Fatalf("payload = %s (%v)", got.body, err)
		}
		deliveryID := got.header.Get("Webhook-Delivery-Id")
		d := s.waitDelivery(t, account, token, l.webhookID, deliveryID, func(d deliveryRecord) bool { return d.Status != "pending" })
		if d.Status != "succeeded" || d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != "202" ||
			d.Attempts[0].ResponseSnippet != "local answer 202" {
			t.Fatalf("delivery record = %+v, want succeeded with the local 202", d)
		}
		if d.Payload != string(got.body) {
			t.Fatalf("the local receiver got a body other than the recorded one:\n got %s\nsent %s", got.body, d.Payload)
		}
		requireLine(t, l, webhooks.EventRunCompleted+`  `+deliveryID+`  attempt 1  -> 202 Accepted in \d+ ms  succeeded`)
	})

	t.Run("LocalErrorIsRetried", func(t *testing.T) {
		account, token := s.newAccount(t)
		local := startLocalReceiver(t, func(n int) int {
			if n == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		l := s.startListen(t, s.apiB, token, account, "flaky", local.url)
		s.emit(t, account, 7)
		first, second := local.next(t), local.next(t)
		deliveryID := first.header.Get("Webhook-Delivery-Id")
		if second.header.Get("Webhook-Delivery-Id") != deliveryID || first.header.Get("Webhook-Attempt") != "1" || second.header.Get("Webhook-Attempt") != "2" ||
			string(first.body) != string(second.body) {
			t.Fatalf("want attempts 1 and 2 of one delivery with one body; got %v and %v", first.header, second.header)
		}
		requireSignedDelivery(t, second, l.secret)
		d := s.waitDelivery(t, account, token, l.webhookID, deliveryID, func(d deliveryRecord) bool { return d.Status == "succeeded" })
		if d.AttemptCount != 2 || len(d.Attempts) != 2 || d.Attempts[0].StatusCode != "500" || d.Attempts[1].StatusCode != "200" {
			t.Fatalf("delivery record = %+v, want a 500 then a 200", d)
		}
		requireLine(t, l, deliveryID+`  attempt 1  -> 500 Internal Server Error in \d+ ms  failed, will be retried`)
		requireLine(t, l, deliveryID+`  attempt 2  -> 200 OK in \d+ ms  succeeded`)
	})

	t.Run("NobodyListeningIsRetried", func(t *testing.T) {
		account, token := s.newAccount(t)
		var opened struct {
			ID        string `json:"id"`
			WebhookID string `json:"webhook_id"`
		}
		if code := s.call(t, http.MethodPost, fmt.Sprintf("%s/api/v3/accounts/%d/webhooks/listeners", s.apiA, account), token,
			map[string]any{"name": "later"}, &opened); code != http.StatusCreated {
			t.Fatalf("open listener = %d", code)
		}
		s.emit(t, account, 9)
		deliveryID := s.onlyDelivery(t, account, token, opened.WebhookID)
		// attempt_count counts an attempt once it is claimed; its outcome
		// is in attempts once recorded.
		d := s.waitDelivery(t, account, token, opened.WebhookID, deliveryID, func(d deliveryRecord) bool { return len(d.Attempts) >= 1 })
		if d.Status != "retrying" || d.Attempts[0].StatusCode != "503" {
			t.Fatalf("with nobody listening: %+v, want the attempt failed with 503 and retrying", d)
		}
		local := startLocalReceiver(t, func(int) int { return http.StatusNoContent })
		l := s.startListen(t, s.apiA, token, account, "later", local.url)
		if l.webhookID != opened.WebhookID || l.listenerID != opened.ID {
			t.Fatalf("listen opened %s/%s, want the listener %s/%s", l.listenerID, l.webhookID, opened.ID, opened.WebhookID)
		}
		got := local.next(t)
		if got.header.Get("Webhook-Delivery-Id") != deliveryID || got.header.Get("Webhook-Attempt") == "1" {
			t.Fatalf("got %v, want a retry of %s", got.header, deliveryID)
		}
		requireSignedDelivery(t, got, l.secret)
		s.waitDelivery(t, account, token, opened.WebhookID, deliveryID, func(d deliveryRecord) bool { return d.Status == "succeeded" })
	})

	t.Run("AcrossTwoAPIReplicas", func(t *testing.T) {
		// listen long polls replica A; the worker's POSTs land on B.
		account, token := s.newAccount(t)
		local := startLocalReceiver(t, func(int) int { return http.StatusOK })
		l := s.startListen(t, s.apiA, token, account, "replicas", local.url)
		s.emit(t, account, 11)
		got := local.next(t)
		requireSignedDelivery(t, got, l.secret)
		s.waitDelivery(t, account, token, l.webhookID, got.header.Get("Webhook-Delivery-Id"), func(d deliveryRecord) bool {
			return d.Status == "succeeded" && d.Attempts[0].StatusCode == "200"
		})
	})

	t.Run("TestEndpointThroughTheRelay", func(t *testing.T) {
		account, token := s.newAccount(t)
		local := startLocalReceiver(t, func(int) int { return http.StatusNoContent })
		l := s.startListen(t, s.apiA, token, account, "tests", local.url)
		url := fmt.Sprintf("%s/api/v3/accounts/%d/webhooks/subscription/%s/test", s.apiA, account, l.webhookID)
		var took []time.Duration
		for range 5 {
			started := time.Now()
			var res struct {
				VerificationError      *string `json:"verification_error"`
				VerificationStatusCode string  `json:"verification_status_code"`
			}
			if code := s.call(t, http.MethodGet, url, token, nil, &res); code != http.StatusOK || res.VerificationStatusCode != "204" || res.VerificationError != nil {
				t.Fatalf("test endpoint = %d %+v, want the local 204", code, res)
			}
			took = append(took, time.Since(started))
			requireSignedDelivery(t, local.next(t), l.secret)
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		t.Logf("relay latency, GET .../test round trip through listen (5 runs): median %s, max %s",
			took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	})
}

// requireSignedDelivery checks what the local receiver got as a receiver
// should: the spec's Authorization and the Standard Webhooks signature, by
// the webhook's secret, over the exact body, and the delivery's headers.
func requireSignedDelivery(t *testing.T, got received, secret string) {
	t.Helper()
	h := got.header
	if !webhooks.VerifySignature(secret, got.body, h.Get("Authorization")) {
		t.Fatalf("Authorization %q is not the HMAC of the body by the webhook's secret", h.Get("Authorization"))
	}
	ts, err := strconv.ParseInt(h.Get("Webhook-Timestamp"), 10, 64)
	if err != nil || !webhooks.VerifyStandardSignature(secret, h.Get("Webhook-Id"), time.Unix(ts, 0), got.body, h.Get("Webhook-Signature")) {
		t.Fatalf("webhook-signature does not verify: %v", h)
	}
	if !webhooks.IsDeliveryID(h.Get("Webhook-Delivery-Id")) || h.Get("Webhook-Id") != h.Get("Webhook-Delivery-Id") ||
		h.Get("Content-Type") != "application/json" || h.Get("User-Agent") == "" || h.Get("Webhook-Attempt") == "" {
		t.Fatalf("delivery headers missing: %v", h)
	}
	if strings.HasPrefix(h.Get("Authorization"), "Token") || h.Get("X-Forwarded-For") != "" {
		t.Fatalf("headers that are not the delivery's reached the local endpoint: %v", h)
	}
}

// requireLine waits (briefly: the line follows the answer) until listen
// printed a line matching pattern.
func requireLine(t *testing.T, l *listenRun, pattern string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  .*` + pattern)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if re.MatchString(l.stdout.String()) {
			return
		}
	}
	t.Fatalf("listen printed no line matching %q:\n%s", pattern, l.stdout.String())
}

// onlyDelivery waits for the webhook's one delivery and returns its id.
func (s *listenStack) onlyDelivery(t *testing.T, account int64, token, webhookID string) string {
	t.Helper()
	url := fmt.Sprintf("%s/api/v3/accounts/%d/webhooks/subscription/%s/deliveries", s.apiA, account, webhookID)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var list []struct {
			ID string `json:"id"`
		}
		s.call(t, http.MethodGet, url, token, nil, &list)
		if len(list) == 1 {
			return list[0].ID
		}
	}
	t.Fatal("no delivery recorded within 30s")
	return ""
}
