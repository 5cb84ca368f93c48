package topology_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/internal/topology"
)

// deliver posts a signed delivery of event to webhook at url, as a worker
// does.
func deliver(t *testing.T, url, webhook, secret, event, deliveryID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"webhooksID": webhook, "eventId": event})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Authorization", hex.EncodeToString(mac.Sum(nil)))
	if deliveryID != "" {
		req.Header.Set("Webhook-Id", deliveryID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestReceiver_CheckFindsEveryWayArrivalsDifferFromExpected(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Trust("wh_a", "sa", r.URLFor(1))
	r.Trust("wh_b", "sb", r.URLFor(2))
	a, b := r.URLFor(1), r.URLFor(2)

	for _, c := range []struct {
		name   string
		arrive func(t *testing.T)
		want   string // "" when Check must pass
	}{
		{"AsExpected", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, ""},
		{"Missing", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
		}, "1 of 3 deliveries missing"},
		{"Unexpected", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
			deliver(t, b, "wh_b", "sb", "e2", "d4")
		}, "1 deliveries no event asked for"},
		{"Repeated", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 repeated arrivals"},
		{"BadSignature", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "wrong", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals with a bad signature"},
		{"AnotherWebhooksPath", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals at another webhook's path"},
		{"NoDeliveryID", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals whose delivery id"},
		{"DeliveryIDChangedOnRetry", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e1", "d9")
			deliver(t, b, "wh_b", "sb", "e1", "d2")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "1 arrivals whose delivery id"},
		{"DeliveryIDShared", func(t *testing.T) {
			deliver(t, a, "wh_a", "sa", "e1", "d1")
			deliver(t, b, "wh_b", "sb", "e1", "d1")
			deliver(t, a, "wh_a", "sa", "e2", "d3")
		}, "2 distinct delivery ids for 3 deliveries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r.Reset()
			r.Accepted("e1", time.Now())
			r.Expect("e1", []string{"wh_a", "wh_b"})
			c.arrive(t)
			// e2 is expected only after its delivery may have arrived, as
			// when a delivery beats the 202 to the sender.
			r.Accepted("e2", time.Now())
			r.Expect("e2", []string{"wh_a"})
			if c.want == "" {
				if err := r.WaitExpected(ctx, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			err := r.Check()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Check = %v, want %q", err, c.want)
			}
		})
	}
}

func TestReceiver_WaitExpectedGivesUpWhenNothingArrives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := topology.StartReceiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Expect("e1", []string{"wh_a", "wh_b"})
	start := time.Now()
	err = r.WaitExpected(ctx, 1500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "0 of 2 deliveries arrived") {
		t.Fatalf("WaitExpected = %v, want it to give up with 0 of 2", err)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("gave up after %s, want about the 1.5s stall", waited)
	}
}
