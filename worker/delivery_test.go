package worker_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

var allTypes = []string{webhooks.EventRunStarted, webhooks.EventRunCompleted, webhooks.EventRunErrored}

func TestDeliver_AllEventTypesSignedWithRunFields(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL+"/hook", allTypes, nil, true)
	rc.setSecret(secret)

	tsFormat := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)
	for _, et := range allTypes {
		t.Run(et, func(t *testing.T) {
			ev := e.ingest(et, 42, "")
			if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusSucceeded || res.LastStatusCode != 200 {
				t.Fatalf("result = %+v", res)
			}
			var got *received
			for _, r := range rc.got() {
				if strings.Contains(string(r.Body), ev) {
					got = &r
				}
			}
			if got == nil {
				t.Fatalf("receiver never got event %s", ev)
			}
			if !got.Signed {
				t.Errorf("signature does not verify: Authorization %q", got.Header.Get("Authorization"))
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			wantDeliveryID := e.deliveryID(ev, sub.ID)
			if h := got.Header.Get(webhooks.HeaderDeliveryID); h != wantDeliveryID {
				t.Errorf("delivery id header = %q, want %q", h, wantDeliveryID)
			}
			p := mustJSON(t, got.Body)
			if p["accountId"] != float64(e.account.ID) || p["webhooksID"] != sub.ID || p["eventId"] != ev ||
				p["eventType"] != et || p["webhookName"] != sub.Name {
				t.Errorf("envelope = %v", p)
			}
			if !tsFormat.MatchString(p["timestamp"].(string)) {
				t.Errorf("timestamp %q not ISO 8601 UTC with nanoseconds", p["timestamp"])
			}
			d := p["data"].(map[string]any)
			status, code := webhooks.DefaultRunStatus(et)
			want := map[string]any{
				"jobId": "42", "jobName": "Nightly build", "runId": "9001", "environmentId": "12",
				"environmentName": "Production", "dbtVersion": "1.9.2", "projectName": "Analytics",
				"projectId": "345", "runStatus": status, "runStatusCode": float64(code),
				"runStatusMessage": "ok", "runReason": "Kicked off by schedule", "runStartedAt": "2026-01-02T03:04:05Z",
			}
			switch et {
			case webhooks.EventRunCompleted:
				want["runFinishedAt"] = "2026-01-02T03:14:05Z"
			case webhooks.EventRunErrored:
				want["runErroredAt"] = "2026-01-02T03:10:05Z"
			}
			if len(d) != len(want) {
				t.Errorf("data has %d fields, want %d: %v", len(d), len(want), d)
			}
			for k, v := range want {
				if d[k] != v {
					t.Errorf("data.%s = %v, want %v", k, d[k], v)
				}
			}
			rec := e.record(ev, sub.ID)
			if rec.Status != deliveries.StatusSucceeded || rec.AttemptCount != 1 || len(rec.Attempts) != 1 || string(rec.Payload) != string(got.Body) {
				t.Errorf("record = %+v", rec)
			}
		})
	}
	after, err := e.subs.Get(context.Background(), e.account.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.HTTPStatusCode != 200 || after.DispatchedAt == nil {
		t.Errorf("subscription http_status_code=%d dispatched_at=%v", after.HTTPStatusCode, after.DispatchedAt)
	}
}

func TestDeliver_Matching(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	forJob42, _ := e.subscribe(rc.URL+"/42", allTypes, []int64{42, 43}, true)
	forJob7, _ := e.subscribe(rc.URL+"/7", allTypes, []int64{7}, true)
	allJobs, _ := e.subscribe(rc.URL+"/all", []string{webhooks.EventRunCompleted, webhooks.EventRunErrored}, nil, true)
	inactive, _ := e.subscribe(rc.URL+"/inactive", allTypes, nil, false)
	startedOnly, _ := e.subscribe(rc.URL+"/started", []string{webhooks.EventRunStarted}, nil, true)

	// An errored run reported both as errored and as completed: two
	// notifications to a subscription with both types (spec 6 rule 1).
	errored := e.ingest(webhooks.EventRunErrored, 42, "")
	completed := e.ingest(webhooks.EventRunCompleted, 42, "")
	for _, ev := range []string{errored, completed} {
		for _, sub := range []string{forJob42.ID, allJobs.ID} {
			if res := e.waitDelivery(ev, sub); res.Status != deliveries.StatusSucceeded {
				t.Errorf("%s to %s: %+v", ev, sub, res)
			}
		}
	}
	paths := map[string]int{}
	for _, r := range rc.got() {
		paths[r.Path]++
	}
	want := map[string]int{"/42": 2, "/all": 2}
	if len(paths) != len(want) || paths["/42"] != 2 || paths["/all"] != 2 {
		t.Errorf("deliveries by endpoint = %v, want %v", paths, want)
	}
	// Deliveries are claimed at ingestion, so once the matching ones are
	// final, every delivery there will ever be is recorded: the others have
	// no record (not merely not yet arrived).
	ctx := context.Background()
	for _, sub := range []string{forJob7.ID, startedOnly.ID} {
		list, total, err := e.store.ListDeliveries(ctx, e.account.ID, sub, deliveries.ListFilter{Limit: 10})
		if err != nil || total != 0 || len(list) != 0 {
			t.Errorf("subscription %s got %d deliveries (err %v)", sub, total, err)
		}
	}
	// The inactive webhook matched both events: each is recorded as
	// skipped (nothing was sent), so it can be sent later.
	list, total, err := e.store.ListDeliveries(ctx, e.account.ID, inactive.ID, deliveries.ListFilter{Limit: 10})
	if err != nil || total != 2 || list[0].Status != deliveries.StatusSkipped || list[1].Status != deliveries.StatusSkipped || list[0].AttemptCount != 0 {
		t.Fatalf("inactive webhook: %d deliveries %+v (err %v), want 2 skipped", total, list, err)
	}
	// Each skipped delivery keeps the exact body it would have sent.
	for _, d := range list {
		full, err := e.store.Delivery(ctx, e.account.ID, inactive.ID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		p := mustJSON(t, full.Payload)
		if p["eventId"] != d.EventID || p["webhooksID"] != inactive.ID || p["webhookName"] != inactive.Name || p["eventType"] != d.EventType {
			t.Errorf("skipped delivery's body = %v", p)
		}
	}
}
