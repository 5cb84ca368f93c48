package worker_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// feedItem is a feed entry as a receiver reads it.
type feedItem struct {
	Sequence      string `json:"sequence"`
	DeliveryID    string `json:"delivery_id"`
	Status        string `json:"status"`
	Body          string `json:"body"`
	Authorization string `json:"authorization"`
}

// readFeed is what a receiver does to heal a gap: every page of the
// webhook's feed after after.
func (e *env) readFeed(subID string, after int64) []feedItem {
	e.t.Helper()
	var all []feedItem
	for {
		code, out := e.call(http.MethodGet, accountPath(e, fmt.Sprintf("/subscription/%s/feed?after=%d&limit=2", subID, after)), e.token, nil)
		if code != http.StatusOK {
			e.t.Fatalf("feed: %d %v", code, out)
		}
		data := out["data"].([]any)
		if len(data) == 0 {
			return all
		}
		for _, d := range data {
			m := d.(map[string]any)
			all = append(all, feedItem{Sequence: m["sequence"].(string), DeliveryID: m["delivery_id"].(string),
				Status: m["status"].(string), Body: m["body"].(string), Authorization: m["authorization"].(string)})
		}
		next, err := strconv.ParseInt(out["extra"].(map[string]any)["next_after"].(string), 10, 64)
		if err != nil || next <= after {
			e.t.Fatalf("next_after %v after %d", out["extra"], after)
		}
		after = next
	}
}

// TestSequence_ReceiverDownPastRetriesHealsFromFeed: every attempt carries
// webhook-sequence (the delivery's number; none on a test delivery; a
// redelivery its original's). A receiver down for longer than the whole
// retry schedule sees the numbers jump when it is back, fetches what it
// missed from the feed, and gets each missed delivery byte for byte as it
// was sent, with an authorization that verifies.
func TestSequence_ReceiverDownPastRetriesHealsFromFeed(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_BREAKER_THRESHOLD": "0"})
	var down atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL+"/hook", allTypes, nil, true)
	rc.setSecret(secret)

	// The receiver processes what it is sent and remembers the last number.
	var before []string
	for i := range 3 {
		before = append(before, e.ingest(webhooks.EventRunCompleted, 1, fmt.Sprintf("wev_up%d", i), sub.ID))
	}
	down.Store(true)
	var missed []string
	for i := range 4 {
		missed = append(missed, e.post(webhooks.EventRunCompleted, 1, fmt.Sprintf("wev_down%d", i)))
	}
	for _, id := range missed {
		if d := e.waitDelivery(id, sub.ID); d.Status != deliveries.StatusFailed {
			t.Fatalf("missed delivery %s ended %s, want failed past its retries", id, d.Status)
		}
	}
	down.Store(false)
	after := e.ingest(webhooks.EventRunCompleted, 1, "wev_back", sub.ID)

	// What arrived, by delivery: its number on every attempt, and its body.
	sent := map[string][]byte{}
	seqOf := map[string]string{}
	for _, r := range rc.got() {
		id := r.Header.Get(webhooks.HeaderDeliveryID)
		n := r.Header.Get(webhooks.HeaderSequence)
		if n == "" || (seqOf[id] != "" && seqOf[id] != n) {
			t.Errorf("delivery %s attempt %s carried webhook-sequence %q (before: %q)", id, r.Header.Get(webhooks.HeaderAttempt), n, seqOf[id])
		}
		if !r.Signed {
			t.Errorf("delivery %s not signed", id)
		}
		seqOf[id], sent[id] = n, r.Body
	}
	for i, ev := range append(append(before, missed...), after) {
		if want, got := strconv.Itoa(i+1), seqOf[e.deliveryID(ev, sub.ID)]; got != want {
			t.Errorf("event %s delivered with webhook-sequence %q, want %s", ev, got, want)
		}
	}

	// The receiver saw 3 then 8: it fetches everything after 3.
	healed := e.readFeed(sub.ID, 3)
	if len(healed) != len(missed)+1 {
		t.Fatalf("feed after 3: %d entries, want %d: %+v", len(healed), len(missed)+1, healed)
	}
	for i, item := range healed {
		if item.Sequence != strconv.Itoa(4+i) {
			t.Errorf("feed entry %d numbered %s, want %d", i, item.Sequence, 4+i)
		}
		if !bytes.Equal([]byte(item.Body), sent[item.DeliveryID]) {
			t.Errorf("feed body of %s differs from what was sent:\n feed %s\n sent %s", item.DeliveryID, item.Body, sent[item.DeliveryID])
		}
		if !webhooks.VerifySignature(secret, []byte(item.Body), item.Authorization) {
			t.Errorf("feed entry %s: authorization does not verify", item.Sequence)
		}
	}
	for i, item := range healed[:len(missed)] {
		if item.DeliveryID != e.deliveryID(missed[i], sub.ID) || item.Status != deliveries.StatusFailed {
			t.Errorf("feed entry %s: %s %s, want the failed delivery of %s", item.Sequence, item.DeliveryID, item.Status, missed[i])
		}
	}

	// A test delivery carries no number; a redelivery its original's.
	if code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil); code != http.StatusOK {
		t.Fatalf("test delivery: %d %v", code, out)
	}
	original := e.deliveryID(missed[1], sub.ID)
	if code, out := e.call(http.MethodPost, accountPath(e, "/subscription/"+sub.ID+"/deliveries/"+original+"/retry"), e.token, nil); code >= 300 {
		t.Fatalf("redeliver: %d %v", code, out)
	}
	seen := len(rc.got())
	waitFor(t, func() bool { return len(rc.got()) > seen })
	var test, redelivered int
	for _, r := range rc.got() {
		id := r.Header.Get(webhooks.HeaderDeliveryID)
		if _, ours := seqOf[id]; ours {
			continue
		}
		switch mustJSON(t, r.Body)["eventId"] {
		case missed[1]:
			redelivered++
			if got := r.Header.Get(webhooks.HeaderSequence); got != "5" {
				t.Errorf("redelivery carried webhook-sequence %q, want its original's 5", got)
			}
		default:
			test++
			if got := r.Header.Values(webhooks.HeaderSequence); len(got) != 0 {
				t.Errorf("test delivery carried webhook-sequence %q, want none", got)
			}
		}
	}
	if test != 1 || redelivered != 1 {
		t.Errorf("%d test deliveries and %d redeliveries arrived, want 1 each", test, redelivered)
	}
}
