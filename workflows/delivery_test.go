package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/workflows"
)

func deliveryInput() deliveries.DeliveryInput {
	return deliveries.DeliveryInput{
		DeliveryID: "wdl_x", SubscriptionID: "wsu_x", WebhookName: "hook", ToolName: "dbt",
		Event: webhooks.Event{ID: "wev_x", AccountID: 7, Type: webhooks.EventRunStarted, Data: webhooks.RunData{
			JobID: "1", RunID: "2", RunStatus: "Running", RunStatusCode: 3, RunStartedAt: "2026-01-02T03:04:05Z",
		}},
		Retry: deliveries.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: deliveries.MaxAttempts, AttemptTimeout: 10 * time.Second, RetryAfterMax: time.Hour,
		},
	}
}

// fakeAttempts answers attempts from a script of status codes (0: success
// after the script runs out) and remembers what it was given.
type fakeAttempts struct {
	codes    []int
	inputs   []deliveries.AttemptInput
	attempts []int32
}

func (f *fakeAttempts) attempt(ctx context.Context, in deliveries.AttemptInput) (deliveries.AttemptResult, error) {
	n := activity.GetInfo(ctx).Attempt + in.AttemptsMade
	f.inputs = append(f.inputs, in)
	f.attempts = append(f.attempts, n)
	code := 200
	if int(n) <= len(f.codes) {
		code = f.codes[n-1]
	}
	if code >= 200 && code < 300 {
		return deliveries.AttemptResult{Status: deliveries.StatusSucceeded, StatusCode: code, Attempts: n}, nil
	}
	res := deliveries.AttemptResult{Status: deliveries.StatusRetrying, StatusCode: code, Error: "bad status", Attempts: n}
	nonRetryable := code >= 400 && code < 500 && code != 408 && code != 429
	if nonRetryable || n >= in.MaxAttempts {
		res.Status = deliveries.StatusFailed
	}
	return res, temporal.NewApplicationErrorWithOptions("bad status", deliveries.ErrorTypeAttemptFailed, temporal.ApplicationErrorOptions{
		NonRetryable: nonRetryable, Details: []any{res},
	})
}

func runDeliver(t *testing.T, in deliveries.DeliveryInput, f *fakeAttempts) (deliveries.DeliveryResult, *testsuite.TestWorkflowEnvironment) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
	env.RegisterActivityWithOptions(f.attempt, activity.RegisterOptions{Name: deliveries.AttemptDeliveryName})
	env.ExecuteWorkflow(deliveries.DeliveryWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var res deliveries.DeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res, env
}

func TestDeliver_Outcomes(t *testing.T) {
	tests := []struct {
		name         string
		codes        []int
		single       bool
		wantStatus   string
		wantAttempts int
		wantCode     int
	}{
		{"FirstTry", nil, false, deliveries.StatusSucceeded, 1, 200},
		{"TwoFailuresThenSuccess", []int{500, 503}, false, deliveries.StatusSucceeded, 3, 200},
		{"AlwaysFailingStopsAfterSix", []int{500, 500, 500, 500, 500, 500, 500}, false, deliveries.StatusFailed, 6, 500},
		{"GoneStopsAtOnce", []int{410}, false, deliveries.StatusFailed, 1, 410},
		{"TimeoutStatusRetried", []int{408, 429}, false, deliveries.StatusSucceeded, 3, 200},
		{"SingleAttemptForTests", []int{500}, true, deliveries.StatusFailed, 1, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAttempts{codes: tt.codes}
			in := deliveryInput()
			in.SingleAttempt = tt.single
			res, _ := runDeliver(t, in, f)
			if res.Status != tt.wantStatus || res.StatusCode != tt.wantCode || len(f.attempts) != tt.wantAttempts {
				t.Errorf("result %+v after %d attempts; want %s, code %d, %d attempts", res, len(f.attempts), tt.wantStatus, tt.wantCode, tt.wantAttempts)
			}
			for i, in := range f.inputs {
				if string(in.Payload) != string(f.inputs[0].Payload) || in.DeliveryID != "wdl_x" {
					t.Errorf("attempt %d got a different body or delivery id", i+1)
				}
			}
		})
	}
}

func TestDeliver_TakesOverAfterTheEventWorkflowsFirstAttempt(t *testing.T) {
	tests := []struct {
		name         string
		codes        []int // by delivery attempt number; the first was made already
		wantStatus   string
		wantAttempts []int32
	}{
		{"SucceedsOnTheThird", []int{500, 500, 200}, deliveries.StatusSucceeded, []int32{2, 3}},
		{"FailsAfterSixInAll", []int{500, 500, 500, 500, 500, 500, 500}, deliveries.StatusFailed, []int32{2, 3, 4, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
			f := &fakeAttempts{codes: tt.codes}
			env.RegisterActivityWithOptions(f.attempt, activity.RegisterOptions{Name: deliveries.AttemptDeliveryName})
			var timers []time.Duration
			env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
			in := deliveryInput()
			in.Payload = []byte(`{"first":"attempt body"}`)
			in.AttemptsMade, in.FirstRetryDelay = 1, 90*time.Second
			env.ExecuteWorkflow(deliveries.DeliveryWorkflowName, in)
			var res deliveries.DeliveryResult
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.wantStatus || len(f.attempts) != len(tt.wantAttempts) {
				t.Fatalf("result %+v after attempts %v; want %s after %v", res, f.attempts, tt.wantStatus, tt.wantAttempts)
			}
			for i, n := range f.attempts {
				if n != tt.wantAttempts[i] || string(f.inputs[i].Payload) != `{"first":"attempt body"}` {
					t.Errorf("attempt %d numbered %d with body %s", i, n, f.inputs[i].Payload)
				}
			}
			if len(timers) == 0 || timers[0] != 90*time.Second {
				t.Errorf("timers %v, want the first retry after 90s", timers)
			}
		})
	}
}

func TestDeliver_BuildsPayloadFromTheEvent(t *testing.T) {
	f := &fakeAttempts{}
	_, env := runDeliver(t, deliveryInput(), f)
	var p map[string]any
	if err := json.Unmarshal(f.inputs[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p["webhooksID"] != "wsu_x" || p["eventId"] != "wev_x" || p["accountId"] != float64(7) || p["webhookName"] != "hook" {
		t.Errorf("payload = %v", p)
	}
	_ = env
	if in := f.inputs[0]; in.MaxAttempts != deliveries.MaxAttempts || in.AccountID != 7 || in.JobID != "1" || in.RunID != "2" {
		t.Errorf("attempt input = %+v", in)
	}
}

func TestDeliver_RedeliverySendsRecordedBody(t *testing.T) {
	f := &fakeAttempts{}
	in := deliveryInput()
	in.Payload = []byte(`{"recorded":true}`)
	in.RedeliveryOf = "wdl_old"
	runDeliver(t, in, f)
	if got := string(f.inputs[0].Payload); got != `{"recorded":true}` || f.inputs[0].RedeliveryOf != "wdl_old" {
		t.Errorf("payload %s, redelivery_of %s", got, f.inputs[0].RedeliveryOf)
	}
}

func TestDeliver_AttemptsThatCannotRecordEndRecordedFailed(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.Deliver, workflow.RegisterOptions{Name: deliveries.DeliveryWorkflowName})
	attempts := 0
	env.RegisterActivityWithOptions(func(ctx context.Context, in deliveries.AttemptInput) (deliveries.AttemptResult, error) {
		attempts++
		return deliveries.AttemptResult{}, errors.New("connect to database: connection refused")
	}, activity.RegisterOptions{Name: deliveries.AttemptDeliveryName})
	var failed []string
	env.RegisterActivityWithOptions(func(ctx context.Context, deliveryID, reason string) error {
		failed = append(failed, deliveryID)
		return nil
	}, activity.RegisterOptions{Name: deliveries.RecordFailureName})
	env.ExecuteWorkflow(deliveries.DeliveryWorkflowName, deliveryInput())
	var res deliveries.DeliveryResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != deliveries.StatusFailed || attempts != deliveries.MaxAttempts {
		t.Errorf("result %+v after %d attempts, want failed after %d", res, attempts, deliveries.MaxAttempts)
	}
	if len(failed) != 1 || failed[0] != "wdl_x" {
		t.Errorf("failure recorded for %v, want [wdl_x]", failed)
	}
}
