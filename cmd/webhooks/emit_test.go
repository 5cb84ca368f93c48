package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// signedBody is one delivery a receiver got, with its signature checked.
type signedBody struct {
	EventType string         `json:"eventType"`
	EventID   string         `json:"eventId"`
	Data      map[string]any `json:"data"`
}

// startSigningReceiver accepts deliveries signed with secret and hands
// their decoded bodies over; a bad signature fails the test.
func startSigningReceiver(t *testing.T, secret *atomic.Value) (string, <-chan signedBody) {
	t.Helper()
	got := make(chan signedBody, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		key, _ := secret.Load().(string)
		if key == "" || !webhooks.VerifySignature(key, raw, r.Header.Get("Authorization")) {
			t.Errorf("delivery with a bad signature: %s", raw)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b signedBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("delivery body is not JSON: %v", err)
		}
		got <- b
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", got
}

func (s *instrumentedStack) subscribeAll(t *testing.T, url string) string {
	t.Helper()
	out := s.call(t, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", s.account), "Token "+s.token, map[string]any{
		"name": "cli", "client_url": url, "event_types": webhooks.EventTypes,
	})
	data, _ := out["data"].(map[string]any)
	secret, _ := data["hmac_secret"].(string)
	if secret == "" {
		t.Fatalf("create subscription: %v", out)
	}
	return secret
}

func nextDelivery(t *testing.T, got <-chan signedBody) signedBody {
	t.Helper()
	select {
	case b := <-got:
		return b
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within 60s")
		return signedBody{}
	}
}

func TestEmit_SendsOneEventThatIsDelivered(t *testing.T) {
	s := startInstrumentedStack(t)
	var secret atomic.Value
	url, got := startSigningReceiver(t, &secret)
	secret.Store(s.subscribeAll(t, url))

	var stdout, stderr testenv.LogBuffer
	getenv := func(k string) string { return map[string]string{"INTERNAL_API_TOKEN": s.internal}[k] }
	args := []string{"emit", "--api", s.apiURL, "--account", fmt.Sprint(s.account), "--type", "job.run.errored", "--job", "42", "--run", "9001", "--event-id", "cli-1"}
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("emit: %v (stderr %s)", err, stderr.String())
	}
	eventID := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(eventID, webhooks.EventIDPrefix) {
		t.Fatalf("emit printed %q, want a wev_ id", eventID)
	}
	b := nextDelivery(t, got)
	if b.EventID != eventID || b.EventType != "job.run.errored" {
		t.Fatalf("delivered %s %s, want %s job.run.errored", b.EventID, b.EventType, eventID)
	}
	if b.Data["jobId"] != "42" || b.Data["runId"] != "9001" || b.Data["runStatus"] != "Errored" || b.Data["runErroredAt"] == nil {
		t.Fatalf("run data = %v", b.Data)
	}
}

func TestSimulate_SendsStartedThenCompleted(t *testing.T) {
	s := startInstrumentedStack(t)
	var secret atomic.Value
	url, got := startSigningReceiver(t, &secret)
	secret.Store(s.subscribeAll(t, url))

	var stdout, stderr testenv.LogBuffer
	getenv := func(k string) string { return map[string]string{"INTERNAL_API_TOKEN": s.internal}[k] }
	args := []string{"simulate", "--api", s.apiURL, "--account", fmt.Sprint(s.account), "--runs", "1", "--run-duration", "10ms", "--error-rate", "0"}
	if err := run(context.Background(), args, getenv, &stdout, &stderr); err != nil {
		t.Fatalf("simulate: %v (stderr %s)", err, stderr.String())
	}
	seen := map[string]signedBody{}
	for range 2 {
		b := nextDelivery(t, got)
		seen[b.EventType] = b
	}
	started, completed := seen["job.run.started"], seen["job.run.completed"]
	if started.Data["runStatus"] != "Running" || completed.Data["runStatus"] != "Success" {
		t.Fatalf("deliveries = %v", seen)
	}
	if started.Data["runId"] != completed.Data["runId"] || completed.Data["runFinishedAt"] == nil {
		t.Fatalf("one run should start and complete: %v", seen)
	}
}

func TestEmit_WithoutInternalTokenFails(t *testing.T) {
	var stdout, stderr testenv.LogBuffer
	err := run(context.Background(), []string{"emit", "--api", "http://127.0.0.1:1"}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "INTERNAL_API_TOKEN") {
		t.Fatalf("emit without token = %v, want an error naming INTERNAL_API_TOKEN", err)
	}
}
