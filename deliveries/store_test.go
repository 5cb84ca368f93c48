package deliveries_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

type fixture struct {
	db      *testenv.Database
	pool    *pgxpool.Pool
	box     *secrets.Box
	store   *deliveries.Store
	subs    *subscriptions.Store
	account webhooks.Account
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "deliveries", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, pool: db.Pool, box: box, store: deliveries.NewStore(db.Pool), subs: subscriptions.NewStore(db.Pool, box), account: acct}
}

// isDerivedID reports whether id is the id ingestion gives the delivery of
// eventID to subscriptionID: a delivery id ending with their key. Its
// second is the database's clock at ingestion, so only the key is derived.
func isDerivedID(id, eventID, subscriptionID string) bool {
	return webhooks.IsDeliveryID(id) && strings.HasSuffix(id, deliveries.DeliveryKey(eventID, subscriptionID))
}

func (f *fixture) subscribe(t *testing.T, eventTypes []string, jobIDs []int64) webhooks.Subscription {
	t.Helper()
	sub, _, err := f.subs.Create(t.Context(), webhooks.Subscription{
		AccountID: f.account.ID, Name: "hook", ClientURL: "https://example.com/hook",
		EventTypes: eventTypes, JobIDs: jobIDs, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func (f *fixture) event(id, jobID string) deliveries.NewEvent {
	return deliveries.NewEvent{ID: id, AccountID: f.account.ID, Type: webhooks.EventRunCompleted,
		JobID: jobID, RunID: "1", Data: webhooks.RunData{JobID: jobID}, ToolName: "dbt"}
}

// TestIngestEvents_ClaimsEachDeliveryOnceUnderConcurrentDuplicates: the
// same event ingested by many concurrent statements is stored once, with
// one delivery per matching webhook whose id is derived from both.
func TestIngestEvents_ClaimsEachDeliveryOnceUnderConcurrentDuplicates(t *testing.T) {
	f := newFixture(t)
	all := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	job := f.subscribe(t, []string{webhooks.EventRunCompleted}, []int64{42})
	f.subscribe(t, []string{webhooks.EventRunCompleted}, []int64{7})
	f.subscribe(t, []string{webhooks.EventRunStarted}, nil)

	const callers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := 0
	for range callers {
		wg.Go(func() {
			// Each statement also carries the event twice, as two callers
			// in one group commit would.
			res, _, err := f.store.IngestEvents(context.Background(), []deliveries.NewEvent{f.event("wev_dup", "42"), f.event("wev_dup", "42")})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res {
				if !r.AccountKnown {
					t.Error("account reported unknown")
				}
			}
			if res[0].Stored {
				stored++
			}
		})
	}
	wg.Wait()
	if stored != 1 {
		t.Errorf("%d statements stored the event, want 1", stored)
	}
	for _, sub := range []webhooks.Subscription{all, job} {
		list, total, err := f.store.ListDeliveries(t.Context(), f.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
		if err != nil || total != 1 || !isDerivedID(list[0].ID, "wev_dup", sub.ID) || list[0].Status != deliveries.StatusPending {
			t.Errorf("webhook %s: %d deliveries %+v (err %v), want 1 pending with the derived id", sub.ID, total, list, err)
		}
	}
}

func TestIngestEvents_ResultsAndLanes(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_old", "1")}); err != nil {
		t.Fatal(err)
	}
	unknown := f.event("wev_other", "1")
	unknown.AccountID = f.account.ID + 1000
	res, lanes, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_new", "x"), unknown, f.event("wev_old", "1")})
	if err != nil {
		t.Fatal(err)
	}
	want := []deliveries.IngestResult{{AccountKnown: true, Stored: true}, {}, {AccountKnown: true}}
	if !slices.Equal(res, want) {
		t.Errorf("results %+v, want %+v", res, want)
	}
	if len(lanes) != 1 || lanes[0] != (deliveries.RoutedWebhook{SubscriptionID: sub.ID, AccountID: f.account.ID, Route: deliveries.RouteShared,
		LaneKey: deliveries.LaneKey(deliveries.DestinationKey(f.account.ID, sub.ClientURL), sub.ID)}) {
		t.Errorf("lanes %+v, want the one webhook once", lanes)
	}
}

// TestClaimAndRecord: a claim counts the attempt and leases the delivery;
// a retrying outcome makes it due again after its wait, a final one never.
func TestClaimAndRecord(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_a", "1"), f.event("wev_b", "1")}); err != nil {
		t.Fatal(err)
	}
	const runID = "0d6a6d3c-5a5e-4c1e-9f1e-2b7c1a7e9f00"
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Minute, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: runID}
	got, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(got) != 2 {
		t.Fatalf("claimed %d (err %v), want 2", len(got), err)
	}
	for _, c := range got {
		data, err := eventdata.Unmarshal(c.EventData)
		if c.Attempt != 1 || c.MaxAttempts != deliveries.MaxAttempts || !c.Body.IsZero() || err != nil || data.JobID != "1" || c.EventToolName != "dbt" {
			t.Errorf("claimed %+v", c)
		}
	}
	if again, err := f.store.ClaimDue(t.Context(), claim); err != nil || len(again) != 0 {
		t.Fatalf("claimed %d leased deliveries again (err %v)", len(again), err)
	}
	now := time.Now()
	_, err = f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{
		{SubscriptionID: sub.ID, DeliveryID: got[0].ID, AttemptNumber: 1, StartedAt: now, StatusCode: 200, Status: deliveries.StatusSucceeded, Body: deliveries.FixedBody{Name: "the name then"}},
		{SubscriptionID: sub.ID, DeliveryID: got[1].ID, AttemptNumber: 1, StartedAt: now, StatusCode: 503, ErrorKind: "http_status", Status: deliveries.StatusRetrying, RetryIn: 0, Body: deliveries.FixedBody{Payload: []byte("body-b")}},
	}, deliveries.RecordPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(retry) != 1 || retry[0].ID != got[1].ID || retry[0].Attempt != 2 || string(retry[0].Body.Payload) != "body-b" {
		t.Fatalf("second claim %+v (err %v), want the retrying delivery's attempt 2 with its fixed body", retry, err)
	}
	done, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, got[0].ID)
	if err != nil || done.Status != deliveries.StatusSucceeded || done.AttemptCount != 1 || done.WorkflowRunID != runID || len(done.Attempts) != 1 {
		t.Errorf("succeeded record %+v (err %v)", done, err)
	}
	// Its spec body was fixed by the webhook's name then: built again from
	// its event with that name, as its attempt built it.
	want, err := deliveries.BuildBody(deliveries.EventBody{AccountID: f.account.ID, SubscriptionID: sub.ID, WebhookName: "the name then",
		EventID: got[0].EventID, EventType: got[0].EventType, EventData: got[0].EventData, ToolName: got[0].EventToolName, AcceptedAt: got[0].EventAcceptedAt})
	if err != nil || string(done.Payload) != string(want) || !strings.Contains(string(want), `"webhookName":"the name then"`) {
		t.Errorf("the body shown %s (err %v), want %s", done.Payload, err, want)
	}
	if in, pending, err := f.store.NextDue(t.Context(), sub.ID); err != nil || !pending || in <= 0 {
		t.Errorf("next due in %s pending %v (err %v), want the leased retry in the future", in, pending, err)
	}
	if n, err := f.store.EndPending(t.Context(), sub.ID, deliveries.StatusCancelled, "the webhook was deleted"); err != nil || n != 0 {
		t.Errorf("cancelled %d (err %v), want none while its attempt is in flight", n, err)
	}
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{{SubscriptionID: sub.ID, DeliveryID: got[1].ID,
		AttemptNumber: 2, StartedAt: time.Now(), StatusCode: 503, ErrorKind: "http_status", Status: deliveries.StatusRetrying, RetryIn: time.Minute}},
		deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.EndPending(t.Context(), sub.ID, deliveries.StatusCancelled, "the webhook was deleted"); err != nil || n != 1 {
		t.Errorf("cancelled %d (err %v), want 1 once its attempt was recorded", n, err)
	}
	if _, pending, err := f.store.NextDue(t.Context(), sub.ID); err != nil || pending {
		t.Errorf("pending after cancel %v (err %v)", pending, err)
	}
}

// TestRecordAttempts_ALateRecordOfAnEarlierAttempt: a record that arrives
// after its delivery was claimed again (its lease ended while the record
// waited, the database away) never lowers the attempts counted, and
// changes the delivery only if it succeeded: a failure would release the
// later attempt's lease while that attempt is in flight.
func TestRecordAttempts_ALateRecordOfAnEarlierAttempt(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(t, []string{webhooks.EventRunCompleted}, nil)
	if _, _, err := f.store.IngestEvents(t.Context(), []deliveries.NewEvent{f.event("wev_failed_late", "1"), f.event("wev_succeeded_late", "1")}); err != nil {
		t.Fatal(err)
	}
	claim := deliveries.Claim{SubscriptionID: sub.ID, Limit: 10, Lease: time.Millisecond, WorkflowID: "webhook/" + sub.ID, WorkflowRunID: "run1"}
	first, err := f.store.ClaimDue(t.Context(), claim)
	if err != nil || len(first) != 2 {
		t.Fatalf("claimed %d (err %v), want 2", len(first), err)
	}
	time.Sleep(20 * time.Millisecond) // the leases end, the records not written
	claim.Lease = time.Minute
	second, err := f.store.ClaimDue(t.Context(), claim)
	// Nothing was recorded: the lost claims' number is reused.
	if err != nil || len(second) != 2 || second[0].Attempt != 1 || second[1].Attempt != 1 {
		t.Fatalf("claimed again %+v (err %v), want both at attempt 1 again", second, err)
	}
	failedLate, succeededLate := first[0].ID, first[1].ID
	now := time.Now()
	record := func(c deliveries.Claimed, code int, status string) deliveries.AttemptRecord {
		r := deliveries.AttemptRecord{SubscriptionID: sub.ID, DeliveryID: c.ID, AttemptNumber: c.Attempt, StartedAt: now,
			StatusCode: code, Status: status, LeasedUntil: c.LeasedUntil}
		if code >= 300 {
			r.ErrorKind = deliveries.KindHTTPStatus
		}
		return r
	}
	// The first claims had sent after all; their records arrive late.
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{
		record(first[0], 503, deliveries.StatusRetrying), record(first[1], 200, deliveries.StatusSucceeded),
	}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	if again, err := f.store.ClaimDue(t.Context(), claim); err != nil || len(again) != 0 {
		t.Errorf("claimed %d while attempt 1 is in flight again (err %v): the late failure released its lease", len(again), err)
	}
	d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, failedLate)
	if err != nil || d.AttemptCount != 1 || d.Status == deliveries.StatusRetrying || len(d.Attempts) != 1 {
		t.Errorf("after a late failure: %s, %d attempts counted, %d recorded (err %v), want unchanged at 1 counted, the late one recorded", d.Status, d.AttemptCount, len(d.Attempts), err)
	}
	d, err = f.store.Delivery(t.Context(), f.account.ID, sub.ID, succeededLate)
	if err != nil || d.AttemptCount != 1 || d.Status != deliveries.StatusSucceeded {
		t.Errorf("after a late success: %s, %d attempts counted (err %v), want succeeded with 1 counted", d.Status, d.AttemptCount, err)
	}
	// The live claims' answers: both 200.
	if _, err := f.store.RecordAttempts(t.Context(), []deliveries.AttemptRecord{
		record(second[0], 200, deliveries.StatusSucceeded), record(second[1], 200, deliveries.StatusSucceeded),
	}, deliveries.RecordPolicy{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{failedLate, succeededLate} {
		d, err := f.store.Delivery(t.Context(), f.account.ID, sub.ID, id)
		if err != nil || d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 200 {
			t.Errorf("%s: %s, %d counted, %d recorded (err %v), want succeeded, 1 and 1, its row the success", id, d.Status, d.AttemptCount, len(d.Attempts), err)
		}
	}
}

// TestReadTarget_AWaitForAConnectionDoesNotAgeTheState: a fence's read
// of a webhook is as old as its statement, not as the wait for a
// connection before it: on a busy pool every fence read was otherwise too
// old, and every late attempt was given back unsent (the soak's stall).
func TestReadTarget_AWaitForAConnectionDoesNotAgeTheState(t *testing.T) {
	db := testenv.NewDatabase(t)
	a, err := identity.NewStore(db.Pool).CreateAccount(t.Context(), "fence", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	loadWebhooks(t, db.Pool, a.ID, 0, 1)
	id := fmt.Sprintf("wsu_load%d_1", a.ID)
	pool := db.OneConnectionPool(t)
	store := deliveries.NewStore(pool)
	busy, err := pool.Acquire(t.Context()) // the pool's one connection, busy for a while
	if err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	var freed time.Time
	go func() {
		time.Sleep(wait)
		freed = time.Now()
		busy.Release()
	}()
	asked := time.Now()
	target, err := store.ReadTarget(t.Context(), id, time.Now)
	if err != nil || target.ID != id || !target.Active {
		t.Fatalf("read %+v (err %v)", target, err)
	}
	if target.ObservedAt.Before(asked.Add(wait)) || target.ObservedAt.Before(freed) {
		t.Errorf("observed at %v after the ask, the connection freed %v after it; want the read's time after the wait",
			target.ObservedAt.Sub(asked), freed.Sub(asked))
	}
	if gone, err := store.ReadTarget(t.Context(), "wsu_none", time.Now); !errors.Is(err, deliveries.ErrSubscriptionGone) || gone.ObservedAt.IsZero() {
		t.Errorf("a missing webhook: %+v (err %v), want ErrSubscriptionGone with the read's time", gone, err)
	}
}
