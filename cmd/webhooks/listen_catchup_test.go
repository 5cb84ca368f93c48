package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// startListenIn runs listen with WEBHOOKS_DATA_DIR dataDir until stop is
// called, and returns once it polls.
func (s *listenStack) startListenIn(tb testing.TB, dataDir, token string, account int64, name, forwardTo string) (*listenRun, func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listenRun{stdout: &testenv.LogBuffer{}}
	var stderr testenv.LogBuffer
	done := make(chan error, 1)
	args := []string{"listen", "--api", s.apiA, "--token", token, "--account", fmt.Sprint(account), "--name", name, "--forward-to", forwardTo}
	getenv := func(k string) string { return map[string]string{"WEBHOOKS_DATA_DIR": dataDir}[k] }
	go func() { done <- run(ctx, args, getenv, l.stdout, &stderr) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("listen: %v\nstderr: %s", err, stderr.String())
		}
	}
	tb.Cleanup(stop)
	for deadline := time.Now().Add(30 * time.Second); !secretLine.MatchString(l.stdout.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("listen did not start within 30s: %s %s", l.stdout.String(), stderr.String())
		}
	}
	m := listeningLine.FindStringSubmatch(l.stdout.String())
	l.listenerID, l.webhookID = m[1], m[2]
	l.secret = secretLine.FindStringSubmatch(l.stdout.String())[1]
	s.waitPolling(tb, l.listenerID)
	return l, stop
}

// TestListen_CatchesUpOnStartEachOnce: deliveries the listener's webhook
// got while no listen ran and that will not come again (here skipped:
// the webhook was inactive) are forwarded on the next start, oldest
// first, signed and numbered as sent; a later start forwards none of them
// again.
func TestListen_CatchesUpOnStartEachOnce(t *testing.T) {
	s := startListenStack(t)
	account, token := s.newAccount(t)
	local := startLocalReceiver(t, func(int) int { return http.StatusOK })
	dataDir := t.TempDir()
	first, stop := s.startListenIn(t, dataDir, token, account, "catch-up", local.url)
	stop()

	setActive := func(active bool) {
		if _, err := s.db.Pool.Exec(context.Background(), "UPDATE webhook_subscriptions SET active = $2 WHERE id = $1", first.webhookID, active); err != nil {
			t.Fatal(err)
		}
	}
	setActive(false)
	s.emit(t, account, 1)
	s.emit(t, account, 2)
	setActive(true)

	second, stop := s.startListenIn(t, dataDir, token, account, "catch-up", local.url)
	for i, want := range []int64{1, 2} {
		got := local.next(t)
		h := got.header
		if h.Get(webhooks.HeaderSequence) != strconv.FormatInt(want, 10) {
			t.Fatalf("catch-up %d: webhook-sequence %q, want %d (oldest first)", i, h.Get(webhooks.HeaderSequence), want)
		}
		if !webhooks.VerifySignature(second.secret, got.body, h.Get("Authorization")) {
			t.Errorf("catch-up %d: Authorization does not verify", i)
		}
		ts, _ := strconv.ParseInt(h.Get("Webhook-Timestamp"), 10, 64)
		if !webhooks.VerifyStandardSignature(second.secret, h.Get("Webhook-Id"), time.Unix(ts, 0), got.body, h.Get("Webhook-Signature")) {
			t.Errorf("catch-up %d: webhook-signature does not verify: %v", i, h)
		}
		var payload struct {
			EventType string `json:"eventType"`
			JobID     string `json:"jobId"`
		}
		if err := json.Unmarshal(got.body, &payload); err != nil {
			t.Fatalf("catch-up %d: body %s: %v", i, got.body, err)
		}
	}
	requireLine(t, second, `catch-up  `+webhooks.EventRunCompleted+`  wdl_\w+  #2 \(skipped\)  -> 200 OK`)
	stop()

	third, _ := s.startListenIn(t, dataDir, token, account, "catch-up", local.url)
	s.emit(t, account, 3)
	got := local.next(t)
	if got.header.Get(webhooks.HeaderSequence) != "3" || got.header.Get("Webhook-Attempt") != "1" {
		t.Fatalf("after a second start the local endpoint got %v, want only the new delivery 3", got.header)
	}
	if strings.Contains(third.stdout.String(), "catch-up  ") {
		t.Errorf("the third start caught up again:\n%s", third.stdout.String())
	}
}
