package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestDeliverShardRound_AHostileAnswerFailsNoOtherRecord: a receiver that
// answers with NUL bytes and invalid UTF-8 in its body is recorded with
// its answer made fit to store, and another account's delivery in the
// same round and the same group of records is recorded too: one row the
// database would refuse never fails the rows beside it, and the round does
// not wait on its bookkeeping (on 564477e it retried the refused group
// until its deadline and recorded neither).
func TestDeliverShardRound_AHostileAnswerFailsNoOtherRecord(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hostile", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\x00\xff\xfe\x00" + strings.Repeat("\x00", 2000)))
	})
	mux.HandleFunc("/clean", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	f := newRateFixture(t, nil)
	hostile := f.webhook(srv.URL + "/hostile")
	other, err := identity.NewStore(f.pool).CreateAccount(t.Context(), "other", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	hostileAccount := f.account
	f.account = other
	clean := f.webhook(srv.URL + "/clean")
	for i, acct := range []int64{hostileAccount.ID, other.ID} {
		if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: fmt.Sprintf("wev_%d", i), AccountID: acct,
			Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := f.acts.Rounds.DeliverShardRound(ctx, ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"})
	if err != nil {
		t.Fatalf("round: %v", err)
	}
	if len(res.Outcomes) != 2 {
		t.Fatalf("round reported %d outcomes, want 2", len(res.Outcomes))
	}
	for _, id := range []string{hostile, clean} {
		var status, snippet string
		if err := f.pool.QueryRow(t.Context(), `SELECT d.status, COALESCE(a.response_snippet, '') FROM webhook_deliveries d
			LEFT JOIN webhook_delivery_attempts a ON a.delivery_id = d.id WHERE d.subscription_id = $1`, id).Scan(&status, &snippet); err != nil {
			t.Fatal(err)
		}
		if status != deliveries.StatusSucceeded {
			t.Errorf("webhook %s: delivery %s, want succeeded", id, status)
		}
		if id == hostile && (!strings.HasPrefix(snippet, "ok\uFFFD") || !utf8.ValidString(snippet) || strings.ContainsRune(snippet, 0) || len(snippet) > deliveries.StoredSnippetMax) {
			t.Errorf("hostile answer stored as %q (%d bytes), want its start, clean, at most %d bytes", snippet, len(snippet), deliveries.StoredSnippetMax)
		}
	}
}

// TestRecordIsolated_ARefusedRecordFailsNoOther: of a group of records,
// one the database refuses (its delivery was deleted meanwhile: a foreign
// key) is given up alone, and the others are written.
func TestRecordIsolated_ARefusedRecordFailsNoOther(t *testing.T) {
	f := newRateFixture(t, nil)
	a, b := f.webhook("https://example.com/a"), f.webhook("https://example.com/b")
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := func(sub string) deliveries.AttemptRecord {
		return deliveries.AttemptRecord{DeliveryID: testenv.DeliveryID(t, f.pool, "wev_1", sub), SubscriptionID: sub, AttemptNumber: 1,
			StartedAt: now, StatusCode: 200, Status: deliveries.StatusSucceeded}
	}
	gone := deliveries.AttemptRecord{DeliveryID: "wdl_deleted", SubscriptionID: a, AttemptNumber: 1, StartedAt: now,
		StatusCode: 200, Status: deliveries.StatusSucceeded}
	w := f.acts.Rounds.outcomes
	if _, err := w.recordUntil(t.Context(), []deliveries.AttemptRecord{rec(a), gone, rec(b)}, time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("record: %v", err)
	}
	var succeeded int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries d JOIN webhook_delivery_attempts a
		ON a.delivery_id = d.id WHERE d.status = 'succeeded'`).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if succeeded != 2 {
		t.Errorf("%d deliveries recorded succeeded with their attempt, want both beside the refused record", succeeded)
	}
}

// TestPipeline_AGivenUpRoundGivesBackWhatItHeld: a round that gives up
// (its claim failed) gives back at once what it claimed and had not
// started, uncounted, so another round takes it now and it keeps all its
// attempts (on 564477e those stayed leased until their leases ended, and
// each spent an attempt never sent).
func TestPipeline_AGivenUpRoundGivesBackWhatItHeld(t *testing.T) {
	f := newRateFixture(t, nil)
	f.webhook("https://example.com/queued")
	for i := range 3 {
		if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: fmt.Sprintf("wev_%d", i), AccountID: f.account.ID,
			Type: webhooks.EventRunCompleted, JobID: "1", RunID: fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	rs := f.acts.Rounds
	rs.limits = roomLimits{} // nothing starts: what is claimed waits in the round's queue
	calls := 0
	claim := func(ctx context.Context, n int, _ claimRooms) (deliveries.ClaimedPage, error) {
		if calls++; calls > 1 {
			return deliveries.ClaimedPage{}, errors.New("connection cut")
		}
		return rs.store.ClaimShared(ctx, deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 10, PerWebhook: 10, Limit: n,
			Lease: time.Minute, WorkflowID: "s"})
	}
	p := rs.newPipeline(t.Context(), claim, time.Now().Add(time.Minute))
	if err := p.run(t.Context()); err == nil {
		t.Fatal("the round did not give up when its claim failed")
	}
	rs.outstanding.Wait()
	var leased, counted int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE leased_until IS NOT NULL), coalesce(sum(attempt_count), 0)
		FROM webhook_deliveries`).Scan(&leased, &counted); err != nil {
		t.Fatal(err)
	}
	if calls < 2 || leased != 0 || counted != 0 {
		t.Errorf("after the round gave up (%d claims): %d deliveries still leased, %d attempts counted; want none", calls, leased, counted)
	}
}

// TestDeliverShardRound_AKeptOutcomeIsRecordedNotSentAgain: an outcome
// its receiver gave whose record could not be written before the claim's
// lease ended (the database away longer than a lease) is kept by the
// worker; the round that claims the delivery again records it instead of
// sending it a second time (on 564477e the outcome was dropped and the
// delivery sent again: the chaos audit's duplicates after an outage).
func TestDeliverShardRound_AKeptOutcomeIsRecordedNotSentAgain(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	f := newRateFixture(t, nil)
	f.webhook(recv.srv.URL + "/hook")
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
		t.Fatal(err)
	}
	rs := f.acts.Rounds
	rs.outcomes.kept.retry = time.Hour // only the claim may record it here
	page, err := f.store.ClaimShared(t.Context(), deliveries.SharedClaim{Shard: 0, Shards: 1, PerKey: 10, PerWebhook: 10, Limit: 10,
		Lease: time.Minute, WorkflowID: "s"})
	if err != nil || len(page.Claimed) != 1 {
		t.Fatalf("claimed %d (err %v), want 1", len(page.Claimed), err)
	}
	c := page.Claimed[0]
	// Its receiver answered 204; the database was away until the lease ended.
	rs.outcomes.keep([]deliveries.Claimed{c}, []deliveries.AttemptRecord{{DeliveryID: c.ID, SubscriptionID: c.Webhook.ID,
		AttemptNumber: c.Attempt, StartedAt: time.Now(), StatusCode: http.StatusNoContent, Status: deliveries.StatusSucceeded}})
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET leased_until = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.DeliverShardRound(t.Context(), ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"}); err != nil {
		t.Fatal(err)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, c.Webhook.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sent := recv.max("/hook"); sent != 0 || d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 || len(d.Attempts) != 1 {
		t.Errorf("receiver saw %d requests; delivery %s after %d attempts (%d recorded); want none sent, succeeded after 1",
			sent, d.Status, d.AttemptCount, len(d.Attempts))
	}
	if rs.outcomes.anyKept() {
		t.Error("the outcome is still kept after it was recorded")
	}
}

// TestKeptOutcomes_AreWrittenOnceTheDatabaseTakesThem: what a worker keeps
// is written by the worker itself, without waiting for a claim.
func TestKeptOutcomes_AreWrittenOnceTheDatabaseTakesThem(t *testing.T) {
	f := newRateFixture(t, nil)
	sub := f.webhook("https://example.com/hook")
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
		t.Fatal(err)
	}
	w := f.acts.Rounds.outcomes
	w.kept.retry = 10 * time.Millisecond
	id := testenv.DeliveryID(t, f.pool, "wev_1", sub)
	w.keep([]deliveries.Claimed{{ID: id}}, []deliveries.AttemptRecord{{DeliveryID: id, SubscriptionID: sub, AttemptNumber: 1,
		StartedAt: time.Now(), StatusCode: 200, Status: deliveries.StatusSucceeded}})
	for deadline := time.Now().Add(10 * time.Second); w.anyKept() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub, id)
	if err != nil || d.Status != deliveries.StatusSucceeded || w.anyKept() {
		t.Errorf("delivery %q (err %v), still kept %v; want it recorded succeeded", d.Status, err, w.anyKept())
	}
}

// TestDeliverShardRound_ADeliveryPastItsAttemptsEnds: a delivery claimed
// past its last attempt (the outcomes of earlier attempts lost) ends
// failed without a request (on 564477e its record named the last attempt,
// which the record statement refuses once a later claim counted one more:
// the delivery stayed retrying and was claimed at every lease, 79 times in
// a chaos run).
func TestDeliverShardRound_ADeliveryPastItsAttemptsEnds(t *testing.T) {
	recv := newFakeReceiver(t, func(string, int) (time.Duration, int) { return 0, http.StatusNoContent })
	f := newRateFixture(t, nil)
	sub := f.webhook(recv.srv.URL + "/hook")
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{{ID: "wev_1", AccountID: f.account.ID,
		Type: webhooks.EventRunCompleted, JobID: "1", RunID: "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET attempt_count = max_attempts, status = 'retrying'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.acts.Rounds.DeliverShardRound(t.Context(), ShardRoundInput{Shard: 0, Shards: 1, WorkflowID: "shard-0-of-1", WorkflowRunID: "r"}); err != nil {
		t.Fatal(err)
	}
	id := testenv.DeliveryID(t, f.pool, "wev_1", sub)
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != deliveries.StatusFailed || d.NextAttemptAt != nil || recv.max("/hook") != 0 {
		t.Errorf("delivery %s (next attempt %v), receiver saw %d; want failed, nothing due, nothing sent", d.Status, d.NextAttemptAt, recv.max("/hook"))
	}
}
