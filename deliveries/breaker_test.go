package deliveries_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

func TestBreaker_RampLimitDoublesEachSecondUntilFull(t *testing.T) {
	b := deliveries.Breaker{RampStart: 2, RampFull: 32}
	for _, tc := range []struct {
		elapsed time.Duration
		want    int
	}{
		{0, 2}, {999 * time.Millisecond, 2}, {time.Second, 4}, {2500 * time.Millisecond, 8},
		{3 * time.Second, 16}, {4 * time.Second, 0}, {time.Hour, 0}, {-time.Second, 0},
	} {
		if got := b.RampLimit(tc.elapsed); got != tc.want {
			t.Errorf("RampLimit(%s) = %d, want %d", tc.elapsed, got, tc.want)
		}
	}
	if got := b.RampDuration(); got != 4*time.Second {
		t.Errorf("RampDuration = %s, want 4s", got)
	}
	if got := (deliveries.Breaker{}).RampLimit(0); got != 0 {
		t.Errorf("no ramp configured: RampLimit = %d, want 0 (no limit)", got)
	}
}

func TestBreaker_ProbeStepDoublesUpToTheMax(t *testing.T) {
	b := deliveries.Breaker{ProbeFirst: 15 * time.Second, ProbeMax: time.Minute}
	for failed, want := range []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, time.Minute, time.Minute} {
		if got := b.ProbeStep(failed); got != want {
			t.Errorf("ProbeStep(%d) = %s, want %s", failed, got, want)
		}
	}
}

func TestOutage_CountsWhatADownReceiverAnswers(t *testing.T) {
	for _, tc := range []struct {
		kind string
		code int
		want bool
	}{
		{"", 200, false},
		{deliveries.KindTimeout, 0, true},
		{deliveries.KindConnection, 0, true},
		{deliveries.KindHTTPStatus, 500, true},
		{deliveries.KindHTTPStatus, 503, true},
		{deliveries.KindHTTPStatus, 429, true},
		{deliveries.KindHTTPStatus, 408, true},
		{deliveries.KindHTTPStatus, 400, false},
		{deliveries.KindHTTPStatus, 410, false},
		{deliveries.KindNotAllowed, 0, false},
		{deliveries.KindSecret, 0, false},
	} {
		if got := deliveries.Outage(tc.kind, tc.code); got != tc.want {
			t.Errorf("Outage(%q, %d) = %v, want %v", tc.kind, tc.code, got, tc.want)
		}
	}
}

// failing records one outage-like failed attempt of each claimed delivery.
func failing(sub string, claimed []deliveries.Claimed, code int) []deliveries.AttemptRecord {
	recs := make([]deliveries.AttemptRecord, len(claimed))
	for i, c := range claimed {
		recs[i] = deliveries.AttemptRecord{SubscriptionID: sub, DeliveryID: c.ID, AttemptNumber: c.Attempt,
			StartedAt: time.Now().Add(time.Duration(i) * time.Millisecond), StatusCode: code, ErrorKind: deliveries.KindHTTPStatus,
			Status: deliveries.StatusRetrying, RetryIn: time.Hour}
	}
	return recs
}

// TestBreaker_OpensProbesAndCloses walks the breaker of a webhook that
// holds its deliveries during an outage (the operator's default here)
// through its states in the store: five outage failures in a row open it (route held,
// pending deliveries held, the probe due after the first step); the probe
// takes the oldest pending delivery without spending its retries; a failed
// probe doubles the step; an answered one closes the breaker and every
// held delivery is due now, back on the webhook's own lane.
func TestBreaker_OpensProbesAndCloses(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	var events []deliveries.NewEvent
	for i := range 7 {
		events = append(events, f.event(fmt.Sprintf("wev_b%d", i), "1"))
	}
	if _, _, err := f.store.IngestEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 5, ProbeFirst: time.Minute, ProbeMax: 4 * time.Minute,
		OnOutage: deliveries.OnOutageHold}}
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 4, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: "r"}

	first, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(first) != 4 {
		t.Fatalf("claimed %d (err %v), want 4", len(first), err)
	}
	changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, first, 503), policy)
	if err != nil || len(changes) != 0 {
		t.Fatalf("4 failures: changes %+v (err %v), want none", changes, err)
	}
	st, err := f.store.Breaker(t.Context(), sub.ID)
	if err != nil || st.Open || st.FailuresInARow != 4 {
		t.Fatalf("after 4 failures: %+v (err %v), want closed with 4 in a row", st, err)
	}
	second, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(second) != 3 {
		t.Fatalf("claimed %d (err %v), want the 3 others", len(second), err)
	}
	changes, err = f.store.RecordAttempts(t.Context(), failing(sub.ID, second[:1], 500), policy)
	if err != nil || len(changes) != 1 || !changes[0].BreakerOpened {
		t.Fatalf("5th failure: changes %+v (err %v), want the breaker opened", changes, err)
	}
	if err := f.store.HoldDeliveries(t.Context(), []string{sub.ID}); err != nil {
		t.Fatal(err)
	}
	st, err = f.store.Breaker(t.Context(), sub.ID)
	if err != nil || !st.Open || st.Route != deliveries.RouteHeld || st.OpenedAt == nil || st.NextProbeAt == nil ||
		st.NextProbeAt.Sub(*st.OpenedAt) < 59*time.Second || st.IncidentStartedAt == nil || st.Backlog != 7 {
		t.Fatalf("opened: %+v (err %v)", st, err)
	}
	// The two still leased are recorded later: no second opening.
	if changes, err = f.store.RecordAttempts(t.Context(), failing(sub.ID, second[1:], 500), policy); err != nil || len(changes) != 0 {
		t.Fatalf("late records while open: changes %+v (err %v)", changes, err)
	}
	// Held: no round takes them, even once due.
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second', leased_until = NULL WHERE subscription_id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := f.store.ClaimDue(t.Context(), claim); err != nil || len(got) != 0 {
		t.Fatalf("a round claimed %d held deliveries (err %v)", len(got), err)
	}

	probe, err := f.store.ClaimProbe(t.Context(), claim)
	if err != nil || len(probe) != 1 {
		t.Fatalf("probe claim %d (err %v), want 1", len(probe), err)
	}
	if probe[0].ID != first[0].ID || probe[0].Attempt != 2 || probe[0].MaxAttempts != deliveries.MaxAttempts+1 {
		t.Errorf("probe %s attempt %d of %d, want the oldest (%s) attempt 2 of %d (a free attempt)",
			probe[0].ID, probe[0].Attempt, probe[0].MaxAttempts, first[0].ID, deliveries.MaxAttempts+1)
	}
	failedProbe := failing(sub.ID, probe, 502)
	failedProbe[0].Probe = true
	if changes, err = f.store.RecordAttempts(t.Context(), failedProbe, policy); err != nil || len(changes) != 0 {
		t.Fatalf("failed probe: changes %+v (err %v)", changes, err)
	}
	st, _ = f.store.Breaker(t.Context(), sub.ID)
	if !st.Open || st.FailedProbes != 1 || st.NextProbeAt == nil || time.Until(*st.NextProbeAt) < 110*time.Second {
		t.Fatalf("after a failed probe: %+v, want open, 1 failed probe, the next one after 2m", st)
	}

	probe, err = f.store.ClaimProbe(t.Context(), claim)
	if err != nil || len(probe) != 1 {
		t.Fatalf("second probe claim %d (err %v)", len(probe), err)
	}
	ok := []deliveries.AttemptRecord{{SubscriptionID: sub.ID, DeliveryID: probe[0].ID, AttemptNumber: probe[0].Attempt,
		StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}}
	changes, err = f.store.RecordAttempts(t.Context(), ok, policy)
	if err != nil || len(changes) != 1 || !changes[0].BreakerClosed {
		t.Fatalf("answered probe: changes %+v (err %v), want the breaker closed", changes, err)
	}
	if n, err := f.store.ReleaseHeld(t.Context(), sub.ID); err != nil || n != 6 {
		t.Fatalf("released %d (err %v), want the 6 still pending", n, err)
	}
	st, _ = f.store.Breaker(t.Context(), sub.ID)
	if st.Open || st.Route != deliveries.RouteOwn || st.ClosedAt == nil || st.FailuresInARow != 0 || st.IncidentStartedAt == nil {
		t.Fatalf("closed: %+v, want route own, closed now, streak reset, the incident still going (quiet period)", st)
	}
	drain, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID})
	if err != nil || len(drain) != 6 {
		t.Fatalf("drain claimed %d (err %v), want all 6, due now", len(drain), err)
	}
	if err := f.store.ProbeNow(t.Context(), sub.ID); err != deliveries.ErrBreakerClosed {
		t.Errorf("ProbeNow on a closed breaker: %v, want ErrBreakerClosed", err)
	}
}

// TestBreaker_AnswersResetTheStreak: failures separated by an answer from a
// live receiver (a 2xx, or a 4xx) never open the breaker.
func TestBreaker_AnswersResetTheStreak(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	var events []deliveries.NewEvent
	for i := range 8 {
		events = append(events, f.event(fmt.Sprintf("wev_r%d", i), "1"))
	}
	if _, _, err := f.store.IngestEvents(t.Context(), events); err != nil {
		t.Fatal(err)
	}
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 5, ProbeFirst: time.Minute, ProbeMax: time.Minute}}
	claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 8, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(claimed) != 8 {
		t.Fatal(len(claimed), err)
	}
	recs := failing(sub.ID, claimed, 500)
	recs[4].StatusCode, recs[4].Status = 404, deliveries.StatusFailed // a live receiver's answer, in the middle
	changes, err := f.store.RecordAttempts(t.Context(), recs, policy)
	if err != nil || len(changes) != 0 {
		t.Fatalf("changes %+v (err %v), want none: 4 and 3 failures around an answer", changes, err)
	}
	if st, _ := f.store.Breaker(t.Context(), sub.ID); st.Open || st.FailuresInARow != 3 {
		t.Errorf("state %+v, want closed with the 3 failures after the answer", st)
	}
}

// TestBreaker_ResetForgetsTheBreakerAndItsIncident: a webhook deactivated
// by hand while its breaker is open starts afresh when activated again.
func TestBreaker_ResetForgetsTheBreakerAndItsIncident(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_x", "1")}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 1, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(claimed) != 1 {
		t.Fatal(len(claimed), err)
	}
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 1, ProbeFirst: time.Minute, ProbeMax: time.Minute,
		OnOutage: deliveries.OnOutageHold}}
	if changes, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, claimed, 503), policy); err != nil || len(changes) != 1 || !changes[0].BreakerOpened {
		t.Fatalf("changes %+v (err %v), want the breaker opened", changes, err)
	}
	if err := f.store.ResetBreaker(t.Context(), sub.ID); err != nil {
		t.Fatal(err)
	}
	st, err := f.store.Breaker(t.Context(), sub.ID)
	if err != nil || st.Open || st.Route != deliveries.RouteShared || st.IncidentStartedAt != nil || st.FailuresInARow != 0 || st.NextProbeAt != nil {
		t.Errorf("after reset: %+v (err %v), want closed, shared, no incident", st, err)
	}
}

// TestBreaker_StrandedHeldDeliveriesAreFound: deliveries left held after
// the breaker closed (its release failed) are listed for the sweeper, and
// released to the webhook's route.
func TestBreaker_StrandedHeldDeliveriesAreFound(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_h1", "1"), f.event("wev_h2", "1")}); err != nil {
		t.Fatal(err)
	}
	claimed, err := f.store.ClaimDue(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Limit: 1, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(claimed) != 1 {
		t.Fatal(len(claimed), err)
	}
	policy := deliveries.RecordPolicy{Breaker: deliveries.Breaker{Threshold: 1, ProbeFirst: time.Minute, ProbeMax: time.Minute,
		OnOutage: deliveries.OnOutageHold}}
	if _, err := f.store.RecordAttempts(t.Context(), failing(sub.ID, claimed, 503), policy); err != nil {
		t.Fatal(err)
	}
	if err := f.store.HoldDeliveries(t.Context(), []string{sub.ID}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.store.StrandedHeld(t.Context(), 10); err != nil || len(got) != 0 {
		t.Fatalf("while the breaker is open: stranded %+v (err %v), want none", got, err)
	}
	probe, err := f.store.ClaimProbe(t.Context(), deliveries.Claim{SubscriptionID: sub.ID, Lease: time.Minute, WorkflowID: "w"})
	if err != nil || len(probe) != 1 {
		t.Fatal(len(probe), err)
	}
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{SubscriptionID: sub.ID, DeliveryID: probe[0].ID,
		AttemptNumber: probe[0].Attempt, StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded, Probe: true}}, policy); err != nil {
		t.Fatal(err)
	}
	// The release after the close did not happen (the database blinked).
	got, err := f.store.StrandedHeld(t.Context(), 10)
	if err != nil || len(got) != 1 || got[0].SubscriptionID != sub.ID {
		t.Fatalf("stranded %+v (err %v), want the webhook", got, err)
	}
	if n, err := f.store.ReleaseHeld(t.Context(), sub.ID); err != nil || n != 1 {
		t.Fatalf("released %d (err %v), want the one left", n, err)
	}
	if got, err := f.store.StrandedHeld(t.Context(), 10); err != nil || len(got) != 0 {
		t.Errorf("after the release: stranded %+v (err %v)", got, err)
	}
}
