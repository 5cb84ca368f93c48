package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

func eventInput() deliveries.EventInput {
	in := deliveryInput()
	return deliveries.EventInput{Event: in.Event, ToolName: "dbt", Retry: in.Retry, BatchedFirstAttempts: true}
}

// fakeEvent plays the event workflow's activities: matching serves pages of
// subscriptions, an attempt's outcome is chosen by subscription id.
type fakeEvent struct {
	mu       sync.Mutex                      // local activities run concurrently
	pages    map[string]deliveries.MatchPage // by cursor
	outcome  func(in deliveries.AttemptInput) (deliveries.AttemptResult, error)
	matches  []deliveries.MatchInput
	attempts []deliveries.AttemptInput
	batches  int // AttemptDeliveries calls
	retries  []deliveries.DeliveryInput
}

// shapes are the two ways an event workflow makes its first attempts: one
// local activity per page (current), one per delivery (workflows started
// before that release, replaying their histories).
var shapes = []struct {
	name    string
	batched bool
}{{"OneActivityPerPage", true}, {"OneActivityPerDelivery", false}}

func (f *fakeEvent) run(t *testing.T, in deliveries.EventInput) (*testsuite.TestWorkflowEnvironment, deliveries.EventResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: deliveries.EventWorkflowID(in.Event.ID)})
	env.RegisterWorkflowWithOptions(workflows.Event, workflow.RegisterOptions{Name: deliveries.EventWorkflowName})
	env.RegisterActivityWithOptions(func(_ context.Context, m deliveries.MatchInput) (deliveries.MatchPage, error) {
		f.matches = append(f.matches, m)
		return f.pages[m.After], nil
	}, activity.RegisterOptions{Name: deliveries.MatchSubscriptionsName})
	env.RegisterActivityWithOptions(func(_ context.Context, a deliveries.AttemptInput) (deliveries.AttemptResult, error) {
		f.mu.Lock()
		f.attempts = append(f.attempts, a)
		f.mu.Unlock()
		return f.outcome(a)
	}, activity.RegisterOptions{Name: deliveries.AttemptDeliveryName})
	env.RegisterActivityWithOptions(func(_ context.Context, as []deliveries.AttemptInput) ([]deliveries.AttemptResult, error) {
		f.batches++
		out := make([]deliveries.AttemptResult, len(as))
		for i, a := range as {
			f.attempts = append(f.attempts, a)
			out[i] = activities.FirstAttemptOutcome(f.outcome(a))
		}
		return out, nil
	}, activity.RegisterOptions{Name: deliveries.AttemptDeliveriesName})
	env.RegisterActivityWithOptions(func(_ context.Context, ins []deliveries.DeliveryInput) error {
		f.retries = append(f.retries, ins...)
		return nil
	}, activity.RegisterOptions{Name: deliveries.StartRetriesName})
	env.ExecuteWorkflow(deliveries.EventWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("event workflow did not complete")
	}
	var res deliveries.EventResult
	err := env.GetWorkflowError()
	if err == nil {
		err = env.GetWorkflowResult(&res)
	}
	return env, res, err
}

func failedAttempt(code int, nonRetryable bool, retryDelay time.Duration) (deliveries.AttemptResult, error) {
	res := deliveries.AttemptResult{Status: deliveries.StatusRetrying, StatusCode: code, Error: "bad status", Attempts: 1, RetryDelay: retryDelay}
	if nonRetryable {
		res.Status = deliveries.StatusFailed
	}
	return res, temporal.NewApplicationErrorWithOptions("bad status", deliveries.ErrorTypeAttemptFailed,
		temporal.ApplicationErrorOptions{NonRetryable: nonRetryable, Details: []any{res}})
}

func TestEvent_FirstAttemptsInTheWorkflowAndRetriesHandedOver(t *testing.T) {
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) { firstAttemptsAndHandOver(t, shape.batched) })
	}
}

func firstAttemptsAndHandOver(t *testing.T, batched bool) {
	subs := []deliveries.MatchedSubscription{{ID: "wsu_ok", Name: "ok"}, {ID: "wsu_500", Name: "flaky"},
		{ID: "wsu_429", Name: "busy"}, {ID: "wsu_410", Name: "gone"}, {ID: "wsu_off", Name: "off"}, {ID: "wsu_db", Name: "db"}}
	f := &fakeEvent{
		pages: map[string]deliveries.MatchPage{"": {Subscriptions: subs}},
		outcome: func(a deliveries.AttemptInput) (deliveries.AttemptResult, error) {
			switch a.SubscriptionID {
			case "wsu_500":
				return failedAttempt(500, false, 0)
			case "wsu_429":
				return failedAttempt(429, false, 90*time.Second)
			case "wsu_410":
				return failedAttempt(410, true, 0)
			case "wsu_off":
				return deliveries.AttemptResult{Status: deliveries.StatusCancelled, Error: "the webhook was deactivated"}, nil
			case "wsu_db":
				return deliveries.AttemptResult{}, errors.New("connect to database: connection refused")
			}
			return deliveries.AttemptResult{Status: deliveries.StatusSucceeded, StatusCode: 200, Attempts: 1}, nil
		},
	}
	in := eventInput()
	in.BatchedFirstAttempts = batched
	_, res, err := f.run(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]int{true: 1, false: 0}[batched]; f.batches != want {
		t.Errorf("%d AttemptDeliveries calls, want %d", f.batches, want)
	}
	want := deliveries.EventResult{Matched: 6, Succeeded: 1, Retrying: 3, Failed: 1, Cancelled: 1}
	if res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if len(f.matches) != 1 || f.matches[0].Limit != deliveries.EventPageSize || f.matches[0].JobID != "1" || f.matches[0].AccountID != 7 {
		t.Errorf("matching asked %+v", f.matches)
	}
	if len(f.attempts) != len(subs) {
		t.Fatalf("%d first attempts, want one per subscription", len(f.attempts))
	}
	bodies := map[string]string{}
	for _, a := range f.attempts {
		wantID := deliveries.DeliveryIDFor(deliveries.DeliveryWorkflowID("wev_x", a.SubscriptionID))
		if a.DeliveryID != wantID || a.WorkflowID != "event/wev_x" || a.AttemptsMade != 0 || a.MaxAttempts != deliveries.MaxAttempts {
			t.Errorf("attempt input %+v", a)
		}
		bodies[a.SubscriptionID] = string(a.Payload)
	}
	// Each webhook's body names it; a handed-over delivery sends that body.
	if !strings.Contains(bodies["wsu_ok"], `"webhooksID":"wsu_ok"`) || !strings.Contains(bodies["wsu_ok"], `"webhookName":"ok"`) {
		t.Errorf("body of wsu_ok: %s", bodies["wsu_ok"])
	}
	wantRetries := map[string]time.Duration{"wsu_500": time.Second, "wsu_429": 90 * time.Second, "wsu_db": time.Second}
	if len(f.retries) != len(wantRetries) {
		t.Fatalf("handed over %d deliveries, want %v", len(f.retries), wantRetries)
	}
	for _, r := range f.retries {
		delay, ok := wantRetries[r.SubscriptionID]
		if !ok || r.FirstRetryDelay != delay || r.AttemptsMade != 1 || string(r.Payload) != bodies[r.SubscriptionID] ||
			r.DeliveryID != deliveries.DeliveryIDFor(deliveries.DeliveryWorkflowID("wev_x", r.SubscriptionID)) {
			t.Errorf("handed over %s: delay %s, made %d, id %s; want delay %s, made 1, the first attempt's body and id",
				r.SubscriptionID, r.FirstRetryDelay, r.AttemptsMade, r.DeliveryID, delay)
		}
	}
}

// The page's activity failing as a whole (timed out, worker gone) hands
// every delivery over with one attempt counted; their delivery workflows
// never resend a recorded outcome.
func TestEvent_PageOfFirstAttemptsFailingAsAWholeHandsAllOver(t *testing.T) {
	subs := []deliveries.MatchedSubscription{{ID: "wsu_a", Name: "a"}, {ID: "wsu_b", Name: "b"}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Event, workflow.RegisterOptions{Name: deliveries.EventWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, deliveries.MatchInput) (deliveries.MatchPage, error) {
		return deliveries.MatchPage{Subscriptions: subs}, nil
	}, activity.RegisterOptions{Name: deliveries.MatchSubscriptionsName})
	env.RegisterActivityWithOptions(func(context.Context, []deliveries.AttemptInput) ([]deliveries.AttemptResult, error) {
		return nil, errors.New("worker shut down")
	}, activity.RegisterOptions{Name: deliveries.AttemptDeliveriesName})
	var retries []deliveries.DeliveryInput
	env.RegisterActivityWithOptions(func(_ context.Context, ins []deliveries.DeliveryInput) error {
		retries = append(retries, ins...)
		return nil
	}, activity.RegisterOptions{Name: deliveries.StartRetriesName})
	in := eventInput()
	in.BatchedFirstAttempts = true
	env.ExecuteWorkflow(deliveries.EventWorkflowName, in)
	var res deliveries.EventResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if want := (deliveries.EventResult{Matched: 2, Retrying: 2}); res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if len(retries) != 2 || retries[0].AttemptsMade != 1 || retries[1].AttemptsMade != 1 || retries[0].FirstRetryDelay != time.Second {
		t.Errorf("handed over %+v, want both after one attempt, 1s initial delay", retries)
	}
}

func TestEvent_NothingMatchedNothingAttempted(t *testing.T) {
	f := &fakeEvent{pages: map[string]deliveries.MatchPage{}, outcome: func(deliveries.AttemptInput) (deliveries.AttemptResult, error) {
		return deliveries.AttemptResult{}, errors.New("no attempt expected")
	}}
	_, res, err := f.run(t, eventInput())
	if err != nil || res != (deliveries.EventResult{}) || len(f.attempts) != 0 || len(f.retries) != 0 {
		t.Errorf("result %+v, err %v, %d attempts, %d retries; want nothing", res, err, len(f.attempts), len(f.retries))
	}
}

func TestEvent_LargeFanOutContinuesAsNewWithTheNextPage(t *testing.T) {
	page := make([]deliveries.MatchedSubscription, deliveries.EventPageSize)
	for i := range page {
		page[i] = deliveries.MatchedSubscription{ID: fmt.Sprintf("wsu_%03d", i), Name: "hook"}
	}
	first := deliveries.MatchPage{Subscriptions: page, More: true}
	f := &fakeEvent{
		pages: map[string]deliveries.MatchPage{},
		outcome: func(deliveries.AttemptInput) (deliveries.AttemptResult, error) {
			return deliveries.AttemptResult{Status: deliveries.StatusSucceeded, StatusCode: 200, Attempts: 1}, nil
		},
	}
	in := eventInput()
	in.Done = deliveries.EventResult{Matched: 7, Succeeded: 7}
	in.FirstPage = &first // matched by the API at ingestion
	_, _, err := f.run(t, in)
	if len(f.matches) != 0 {
		t.Errorf("matched again in the workflow: %+v", f.matches)
	}
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next deliveries.EventInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	wantDone := deliveries.EventResult{Matched: 7 + deliveries.EventPageSize, Succeeded: 7 + deliveries.EventPageSize}
	if next.After != page[len(page)-1].ID || next.Done != wantDone || next.Event.ID != "wev_x" ||
		can.WorkflowType.Name != deliveries.EventWorkflowName || next.FirstPage != nil || !next.BatchedFirstAttempts {
		t.Errorf("continued with after %q, done %+v, event %q, type %s, first page %v, batched %v; want the next page matched in the workflow",
			next.After, next.Done, next.Event.ID, can.WorkflowType.Name, next.FirstPage, next.BatchedFirstAttempts)
	}
	if len(f.attempts) != deliveries.EventPageSize {
		t.Errorf("%d attempts in this run, want %d", len(f.attempts), deliveries.EventPageSize)
	}
}

// A run repeated after a worker crash rebuilds the bodies: they must be the
// bytes the first run sent, so the timestamp is the event's acceptance time,
// not the workflow task's.
func TestEvent_BodyTimestampIsTheEventsAcceptanceTime(t *testing.T) {
	accepted := time.Date(2026, 11, 23, 4, 5, 6, 123456789, time.FixedZone("CET", 3600))
	bodies := func() [][]byte {
		f := &fakeEvent{
			pages: map[string]deliveries.MatchPage{"": {Subscriptions: []deliveries.MatchedSubscription{{ID: "wsu_a", Name: "a"}}}},
			outcome: func(deliveries.AttemptInput) (deliveries.AttemptResult, error) {
				return deliveries.AttemptResult{Status: deliveries.StatusSucceeded, StatusCode: 200, Attempts: 1}, nil
			},
		}
		in := eventInput()
		in.AcceptedAt = accepted
		if _, _, err := f.run(t, in); err != nil {
			t.Fatal(err)
		}
		var out [][]byte
		for _, a := range f.attempts {
			out = append(out, a.Payload)
		}
		return out
	}
	first, again := bodies(), bodies()
	if len(first) != 1 || len(again) != 1 {
		t.Fatalf("attempts: %d and %d, want 1 each", len(first), len(again))
	}
	if want := `"timestamp":"2026-11-23T03:05:06.123456789Z"`; !strings.Contains(string(first[0]), want) {
		t.Errorf("body %s lacks %s", first[0], want)
	}
	if string(first[0]) != string(again[0]) {
		t.Errorf("a repeated run built another body:\n%s\n%s", first[0], again[0])
	}
}
