package deliveries_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// setOnOutage stores a webhook's on_outage ("" clears it: the default).
func (f *fixture) setOnOutage(t *testing.T, subID, mode string) {
	t.Helper()
	var v *string
	if mode != "" {
		v = &mode
	}
	if _, err := f.pool.Exec(t.Context(), `
		INSERT INTO webhook_delivery_settings (subscription_id, account_id, on_outage, created_at, updated_at)
		VALUES ($1, $2, $3, now(), now())
		ON CONFLICT (subscription_id) DO UPDATE SET on_outage = EXCLUDED.on_outage`, subID, f.account.ID, v); err != nil {
		t.Fatal(err)
	}
}

// dueNow makes every pending delivery of a webhook due, unleased.
func (f *fixture) dueNow(t *testing.T, subID string) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second', leased_until = NULL
		WHERE subscription_id = $1 AND next_attempt_at IS NOT NULL`, subID); err != nil {
		t.Fatal(err)
	}
}

// ingestN stores n events matching sub.
func (f *fixture) ingestN(t *testing.T, prefix string, n int) {
	t.Helper()
	var events []deliveries.NewEvent
	for i := range n {
		events = append(events, f.event(fmt.Sprintf("wev_%s%d", prefix, i), "1"))
	}
	if _, _, err := f.store.IngestEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
}

// TestBreaker_DefaultKeepsEveryDeliveryOnItsSchedule: with the defaults
// (on_outage "retry"), an outage opens the breaker (an incident) but
// neither holds nor moves anything: the webhook stays on its shard, the
// deliveries stay claimable, each ends failed with its latest status
// after its last attempt, and the next answer closes the breaker.
func TestBreaker_DefaultKeepsEveryDeliveryOnItsSchedule(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	f.ingestN(t, "d", 3)
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 2, ProbeFirst: time.Minute, ProbeMax: time.Minute}}
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: "r"}

	claimed, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claimed %d (err %v), want 3", len(claimed), err)
	}
	changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, claimed, 500), policy)
	if err != nil || len(changes) != 1 || !changes[0].BreakerOpened || changes[0].Held || changes[0].ToOwnLane {
		t.Fatalf("3 failures: changes %+v (err %v), want the breaker opened, nothing held, the webhook on its route", changes, err)
	}
	if err := f.store.HoldDeliveries(t.Context(), []string{sub.ID}); err != nil {
		t.Fatal(err)
	}
	st, err := f.store.Breaker(t.Context(), sub.ID)
	if err != nil || !st.Open || st.Held || st.Route != deliveries.RouteShared || st.OpenedAt == nil || st.NextProbeAt != nil ||
		st.IncidentStartedAt == nil || st.Backlog != 3 {
		t.Fatalf("opened: %+v (err %v), want open, not held, still shared, no probe, an incident", st, err)
	}
	if marks, err := f.store.AccountOpenBreakers(t.Context(), f.account.ID); err != nil || marks[sub.ID] != deliveries.MarkRetrying {
		t.Errorf("the list's marks %v (err %v), want %s retrying", marks, err, sub.ID)
	}
	if n, err := f.store.OpenBreakers(t.Context()); err != nil || n < 1 {
		t.Errorf("open breakers (metric) %d (err %v), want this one counted", n, err)
	}

	// Due again: the lane takes them, and their last attempt ends them.
	f.dueNow(t, sub.ID)
	again, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(again) != 3 {
		t.Fatalf("claimed %d after the opening (err %v), want all 3: nothing is held", len(again), err)
	}
	last := failing(sub.ID, again, 500)
	for i := range last {
		last[i].Status = deliveries.StatusFailed
	}
	if changes, err := f.store.RecordAttempts(t.Context(), last, policy); err != nil || len(changes) != 0 {
		t.Fatalf("last attempts: changes %+v (err %v), want none (still open)", changes, err)
	}
	for _, c := range again {
		d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, c.ID)
		if err != nil || d.Status != deliveries.StatusFailed || d.LastStatusCode != 500 || d.CompletedAt == nil {
			t.Errorf("delivery %s: %s %d (err %v), want failed 500, final", c.ID, d.Status, d.LastStatusCode, err)
		}
	}

	// Any answer closes it, as a probe's would.
	f.ingestN(t, "e", 1)
	next, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(next) != 1 {
		t.Fatalf("claimed %d (err %v), want the new one", len(next), err)
	}
	changes, err = f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{SubscriptionID: sub.ID, DeliveryID: next[0].ID,
		AttemptNumber: next[0].Attempt, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}, policy)
	if err != nil || len(changes) != 1 || !changes[0].BreakerClosed {
		t.Fatalf("an answer: changes %+v (err %v), want the breaker closed", changes, err)
	}
	if st, _ := f.store.Breaker(t.Context(), sub.ID); st.Open || st.ClosedAt == nil || st.Route != deliveries.RouteShared {
		t.Errorf("after the answer: %+v, want closed, still shared", st)
	}
}

// TestBreaker_WebhookOnOutageOverridesTheDefault: a webhook's own
// on_outage wins over the operator's default, both ways.
func TestBreaker_WebhookOnOutageOverridesTheDefault(t *testing.T) {
	for _, tc := range []struct {
		name, operator, webhook string
		wantHeld                bool
	}{
		{"DefaultRetry", "", "", false},
		{"OperatorHold", deliveries.OnOutageHold, "", true},
		{"WebhookRetryOverOperatorHold", deliveries.OnOutageHold, deliveries.OnOutageRetry, false},
		{"WebhookHoldOverOperatorRetry", deliveries.OnOutageRetry, deliveries.OnOutageHold, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
			f.setOnOutage(t, sub.ID, tc.webhook)
			f.ingestN(t, "o", 2)
			policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 1, ProbeFirst: time.Minute, ProbeMax: time.Minute,
				OnOutage: tc.operator}}
			claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 1, Lease: time.Minute, WorkflowID: "w"})
			if err != nil || len(claimed) != 1 {
				t.Fatal(len(claimed), err)
			}
			changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, claimed, 503), policy)
			if err != nil || len(changes) != 1 || !changes[0].BreakerOpened || changes[0].Held != tc.wantHeld {
				t.Fatalf("changes %+v (err %v), want opened, held %v", changes, err, tc.wantHeld)
			}
			if err := f.store.HoldDeliveries(t.Context(), []string{sub.ID}); err != nil {
				t.Fatal(err)
			}
			f.dueNow(t, sub.ID)
			st, _ := f.store.Breaker(t.Context(), sub.ID)
			taken, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "w"})
			if err != nil || st.Held != tc.wantHeld || (len(taken) == 0) != tc.wantHeld || (st.NextProbeAt != nil) != tc.wantHeld {
				t.Errorf("state %+v, %d claimable (err %v): want held %v (nothing claimable, a probe due)", st, len(taken), err, tc.wantHeld)
			}
		})
	}
}

// TestBreaker_FollowsOnOutageChangedWhileOpen: a webhook whose on_outage
// changes while its breaker is open follows it at its next record: to
// "hold", its deliveries are held and a probe is due; back to "retry",
// they return to their schedule and there is no probe.
func TestBreaker_FollowsOnOutageChangedWhileOpen(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	f.ingestN(t, "c", 3)
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 1, ProbeFirst: time.Minute, ProbeMax: time.Minute}}
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 1, Lease: time.Minute, WorkflowID: "w"}
	first, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(first) != 1 {
		t.Fatal(len(first), err)
	}
	if changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, first, 500), policy); err != nil || len(changes) != 1 || changes[0].Held {
		t.Fatalf("opening: %+v (err %v), want opened, not held", changes, err)
	}

	f.setOnOutage(t, sub.ID, deliveries.OnOutageHold)
	second, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(second) != 1 {
		t.Fatal(len(second), err)
	}
	changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, second, 500), policy)
	if err != nil || len(changes) != 1 || !changes[0].Held || changes[0].BreakerOpened {
		t.Fatalf("after the change to hold: %+v (err %v), want held (no new opening)", changes, err)
	}
	if err := f.store.HoldDeliveries(t.Context(), []string{sub.ID}); err != nil {
		t.Fatal(err)
	}
	st, _ := f.store.Breaker(t.Context(), sub.ID)
	if !st.Open || !st.Held || st.NextProbeAt == nil {
		t.Fatalf("held: %+v, want open, held, a probe due", st)
	}

	f.setOnOutage(t, sub.ID, deliveries.OnOutageRetry)
	probe, err := f.store.ClaimProbe(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(probe) != 1 {
		t.Fatal(len(probe), err)
	}
	recs := failing(sub.ID, probe, 500)
	recs[0].Probe = true
	changes, err = f.store.RecordAttempts(t.Context(), recs, policy)
	if err != nil || len(changes) != 1 || !changes[0].ToOwnLane || changes[0].Held {
		t.Fatalf("after the change to retry: %+v (err %v), want back to its own lane", changes, err)
	}
	st, _ = f.store.Breaker(t.Context(), sub.ID)
	if !st.Open || st.Held || st.Route != deliveries.RouteOwn || st.NextProbeAt != nil || st.FailedProbes != 0 {
		t.Fatalf("retrying again: %+v, want open, not held, no probe", st)
	}
	if n, err := f.store.ReleaseHeld(t.Context(), sub.ID); err != nil || n != 3 {
		t.Errorf("released %d (err %v), want the 3 held back to their schedule", n, err)
	}
}

// TestDisableByReceiver_OnlyWhileTheWebhookStillSendsThere: a receiver's
// "Webhook-Delivery: disable" deactivates the webhook only while it still
// has the client_url and secret version the attempt was sent with: a
// receiver it moved away from (a new URL, a rotated secret) cannot.
func TestDisableByReceiver_OnlyWhileTheWebhookStillSendsThere(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	sent := deliveries.AttemptRecord{SubscriptionID: sub.ID, ClientURL: sub.ClientURL, SecretVersion: 1}
	const reason = "The receiver asked to stop deliveries."

	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET client_url = 'https://example.com/moved' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, changed, err := f.store.DisableByReceiver(t.Context(), sent, reason); err != nil || changed {
		t.Fatalf("the old URL's receiver: changed %v (err %v), want nothing changed", changed, err)
	}
	moved := sent
	moved.ClientURL = "https://example.com/moved"
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_subscriptions SET secret_version = secret_version + 1 WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if _, changed, err := f.store.DisableByReceiver(t.Context(), moved, reason); err != nil || changed {
		t.Fatalf("an attempt signed with the secret before its rotation: changed %v (err %v), want nothing changed", changed, err)
	}
	var active bool
	if err := f.pool.QueryRow(t.Context(), `SELECT active FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&active); err != nil || !active {
		t.Fatalf("active %v (err %v), want still active", active, err)
	}
	moved.SecretVersion = 2
	c, changed, err := f.store.DisableByReceiver(t.Context(), moved, reason)
	if err != nil || !changed || !c.Disabled || !c.ByReceiver {
		t.Fatalf("the receiver it sends to now: %+v changed %v (err %v), want deactivated", c, changed, err)
	}
}
