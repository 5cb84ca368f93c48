package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
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
			if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusSucceeded || res.StatusCode != 200 {
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
			wantDeliveryID := deliveries.DeliveryIDFor(deliveries.DeliveryWorkflowID(ev, sub.ID))
			if h := got.Header.Get(activities.HeaderDeliveryID); h != wantDeliveryID {
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
	// The event workflows have finished, so every delivery they would make
	// is recorded: each matched exactly the two subscriptions above and
	// delivered to both first time (no delivery workflow needed), and the
	// others have no record (not merely not yet arrived).
	ctx := context.Background()
	for _, ev := range []string{errored, completed} {
		var res deliveries.EventResult
		if err := e.temporal.GetWorkflow(ctx, deliveries.EventWorkflowID(ev), "").Get(ctx, &res); err != nil ||
			res != (deliveries.EventResult{Matched: 2, Succeeded: 2}) {
			t.Errorf("event %s: %+v (err %v), want 2 matched and succeeded", ev, res, err)
		}
		for _, sub := range []string{forJob42.ID, allJobs.ID, forJob7.ID, inactive.ID, startedOnly.ID} {
			if e.handedOver(ev, sub) {
				t.Errorf("delivery of %s to %s has a delivery workflow; want the first attempt in the event workflow", ev, sub)
			}
		}
	}
	for _, sub := range []string{forJob7.ID, inactive.ID, startedOnly.ID} {
		list, total, err := e.store.ListDeliveries(ctx, e.account.ID, sub, deliveries.ListFilter{Limit: 10})
		if err != nil || total != 0 || len(list) != 0 {
			t.Errorf("subscription %s got %d deliveries (err %v)", sub, total, err)
		}
	}
}

func TestDeliver_Retries(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()

	tests := []struct {
		name        string
		respond     func(int, http.ResponseWriter, *http.Request)
		url         string // overrides the receiver's
		wantStatus  string
		wantCodes   []int // status code of each attempt
		wantKinds   []string
		wantArrived int
	}{
		{
			name: "TwoFailuresThenSuccess",
			respond: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n <= 2 {
					w.WriteHeader(500)
					return
				}
				w.WriteHeader(200)
			},
			wantStatus: deliveries.StatusSucceeded, wantCodes: []int{500, 500, 200},
			wantKinds: []string{activities.KindHTTPStatus, activities.KindHTTPStatus, ""}, wantArrived: 3,
		},
		{
			name: "AlwaysFailing", respond: status(500), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{500, 500, 500, 500, 500, 500}, wantArrived: 6,
		},
		{
			name: "GoneStopsAtOnce", respond: status(410), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{410}, wantArrived: 1,
		},
		{
			name: "BadRequestStopsAtOnce", respond: status(400), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{400}, wantArrived: 1,
		},
		{
			name: "TooManyRequestsRetried",
			respond: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(429)
					return
				}
				w.WriteHeader(204)
			},
			wantStatus: deliveries.StatusSucceeded, wantCodes: []int{429, 204}, wantArrived: 2,
		},
		{
			name: "RedirectNotFollowed",
			respond: func(_ int, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					w.WriteHeader(200)
					return
				}
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			wantStatus: deliveries.StatusFailed, wantCodes: []int{302, 302, 302, 302, 302, 302}, wantArrived: 6,
		},
		{
			name: "ConnectionRefused", url: refusedURL, wantStatus: deliveries.StatusFailed,
			wantCodes: []int{0, 0, 0, 0, 0, 0},
			wantKinds: slices.Repeat([]string{activities.KindConnection}, 6),
		},
		{
			name: "AnswerAfterElevenSecondsIsAFailure",
			respond: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					time.Sleep(11 * time.Second)
				}
				w.WriteHeader(200)
			},
			wantStatus: deliveries.StatusSucceeded, wantCodes: []int{0, 200},
			wantKinds: []string{activities.KindTimeout, ""}, wantArrived: 2,
		},
	}
	e := newEnv(t, true, nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jobID := int64(100 + i) // subtests share the account: one job each
			rc := newReceiver(t, tt.respond)
			url := rc.URL + "/hook"
			if tt.url != "" {
				url = tt.url
			}
			sub, secret := e.subscribe(url, allTypes, []int64{jobID}, true)
			rc.setSecret(secret)
			ev := e.ingest(webhooks.EventRunStarted, jobID, "")
			res := e.waitDelivery(ev, sub.ID)
			if res.Status != tt.wantStatus {
				t.Errorf("result = %+v, want status %s", res, tt.wantStatus)
			}
			rec := e.record(ev, sub.ID)
			var codes []int
			var kinds []string
			for _, a := range rec.Attempts {
				codes = append(codes, a.StatusCode)
				kinds = append(kinds, a.ErrorKind)
			}
			if rec.Status != tt.wantStatus || !slices.Equal(codes, tt.wantCodes) || rec.AttemptCount != len(tt.wantCodes) {
				t.Errorf("record status %s attempts %d codes %v, want %s %v", rec.Status, rec.AttemptCount, codes, tt.wantStatus, tt.wantCodes)
			}
			if tt.wantKinds != nil && !slices.Equal(kinds, tt.wantKinds) {
				t.Errorf("error kinds = %q, want %q", kinds, tt.wantKinds)
			}
			// The subscription keeps the latest HTTP status received: an
			// attempt without a response leaves http_status_code as it was.
			after, err := e.subs.Get(context.Background(), e.account.ID, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.wantCodes[len(tt.wantCodes)-1]; after.HTTPStatusCode != want || after.DispatchedAt == nil {
				t.Errorf("subscription http_status_code %d dispatched_at %v, want %d and set", after.HTTPStatusCode, after.DispatchedAt, want)
			}
			got := rc.got()
			if len(got) != tt.wantArrived {
				t.Errorf("receiver got %d requests, want %d", len(got), tt.wantArrived)
			}
			for _, r := range got {
				if r.Path == "/elsewhere" {
					t.Errorf("redirect was followed")
				}
				if string(r.Body) != string(got[0].Body) || r.Header.Get(activities.HeaderDeliveryID) != got[0].Header.Get(activities.HeaderDeliveryID) {
					t.Errorf("retries must send identical bodies and the same delivery id")
				}
			}
		})
	}
}

func TestDeliver_SubscriptionDeletedDuringRetriesIsCancelled(t *testing.T) {
	e := newEnv(t, true, nil)
	var subID string
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			if err := e.subs.Delete(context.Background(), e.account.ID, subID); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
		w.WriteHeader(503)
	})
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	subID = sub.ID
	ev := e.ingest(webhooks.EventRunStarted, 1, "")
	if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusCancelled {
		t.Errorf("result = %+v, want cancelled", res)
	}
	if n := len(rc.got()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	rec := e.record(ev, sub.ID)
	if rec.Status != deliveries.StatusCancelled || rec.AttemptCount != 1 {
		t.Errorf("record = %s after %d attempts, want cancelled after 1", rec.Status, rec.AttemptCount)
	}
}

func TestIngest_DuplicateEventIDDeliversOnce(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	// Caller ids unique per run: the dev server outlives one test (-count=N)
	// while account ids restart in each fresh database.
	callerID := "run-77-completed-" + webhooks.NewID("")
	first := e.ingest(webhooks.EventRunCompleted, 5, callerID)
	e.waitDelivery(first, sub.ID)
	second := e.ingest(webhooks.EventRunCompleted, 5, callerID)
	if first != second {
		t.Fatalf("same caller eventId gave %s then %s", first, second)
	}
	e.waitDelivery(second, sub.ID)
	if n := len(rc.got()); n != 1 {
		t.Errorf("receiver got %d deliveries, want 1", n)
	}
	if other := e.ingest(webhooks.EventRunCompleted, 5, "run-78-completed-"+webhooks.NewID("")); other == first {
		t.Errorf("different caller eventIds share %s", other)
	}
}

func TestIngest_RejectsBadInput(t *testing.T) {
	e := newEnv(t, false, nil)
	good := func() map[string]any {
		return map[string]any{"accountId": e.account.ID, "eventType": webhooks.EventRunCompleted, "data": runData(1, webhooks.EventRunCompleted)}
	}
	tests := []struct {
		name      string
		token     string
		mutate    func(map[string]any)
		wantCode  int
		wantField string
	}{
		{name: "NoToken", token: "-", wantCode: 401},
		{name: "WrongToken", token: "whi_wrong_token_wrong_token_wrong_token", wantCode: 401},
		{name: "UnknownEventType", mutate: func(b map[string]any) { b["eventType"] = "job.run.paused" }, wantCode: 400, wantField: "eventType"},
		{name: "AccountIDNotNumber", mutate: func(b map[string]any) { b["accountId"] = "abc" }, wantCode: 400, wantField: "accountId"},
		{name: "UnknownAccount", mutate: func(b map[string]any) { b["accountId"] = 987654321 }, wantCode: 400, wantField: "accountId"},
		{name: "NoData", mutate: func(b map[string]any) { delete(b, "data") }, wantCode: 400, wantField: "data"},
		{name: "NoJobID", mutate: func(b map[string]any) { delete(b["data"].(map[string]any), "jobId") }, wantCode: 400, wantField: "data.jobId"},
		{name: "CompletedWithoutFinish", mutate: func(b map[string]any) { delete(b["data"].(map[string]any), "runFinishedAt") }, wantCode: 400, wantField: "data.runFinishedAt"},
		{name: "BadTime", mutate: func(b map[string]any) { b["data"].(map[string]any)["runStartedAt"] = "yesterday" }, wantCode: 400, wantField: "data.runStartedAt"},
		{name: "ObjectAsJobID", mutate: func(b map[string]any) { b["data"].(map[string]any)["jobId"] = map[string]any{} }, wantCode: 400, wantField: "data.jobId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := good()
			if tt.mutate != nil {
				tt.mutate(body)
			}
			token := e.cfg.InternalAPIToken
			if tt.token == "-" {
				token = ""
			} else if tt.token != "" {
				token = tt.token
			}
			code, out := e.call(http.MethodPost, "/internal/v1/job-run-events", token, body)
			if code != tt.wantCode {
				t.Fatalf("code = %d, want %d: %v", code, tt.wantCode, out)
			}
			if tt.wantField != "" {
				msg, _ := json.Marshal(out["status"])
				if !strings.Contains(string(msg), tt.wantField) {
					t.Errorf("error does not name %s: %s", tt.wantField, msg)
				}
			}
		})
	}
}

func TestDeliver_DestinationRefusedAtConnectionTime(t *testing.T) {
	// Loopback is not allowed here: the receiver must never be reached, even
	// though the subscription row says 127.0.0.1 (as after DNS rebinding).
	e := newEnv(t, true, map[string]string{"DESTINATION_ALLOW_CIDRS": "10.99.0.0/16"})
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	ev := e.ingest(webhooks.EventRunStarted, 1, "")
	if res := e.waitDelivery(ev, sub.ID); res.Status != deliveries.StatusFailed {
		t.Errorf("result = %+v, want failed", res)
	}
	rec := e.record(ev, sub.ID)
	if len(rec.Attempts) != 1 || rec.Attempts[0].ErrorKind != activities.KindNotAllowed {
		t.Errorf("attempts = %+v, want one not_allowed", rec.Attempts)
	}
	if n := len(rc.got()); n != 0 {
		t.Errorf("receiver reached %d times", n)
	}
}

func TestSubscriptionsForEvent_JobIDThatIsNotANumberMatchesOnlyAllJobs(t *testing.T) {
	e := newEnv(t, false, nil)
	allJobs, _ := e.subscribe("http://127.0.0.1:9/all", allTypes, nil, true)
	forJob42, _ := e.subscribe("http://127.0.0.1:9/42", allTypes, []int64{42}, true)
	ctx := context.Background()
	tests := []struct {
		jobID string
		want  []string
	}{
		{"42", slices.Sorted(slices.Values([]string{allJobs.ID, forJob42.ID}))}, // id order
		{"7", []string{allJobs.ID}},
		{"job-42", []string{allJobs.ID}},
	}
	for _, tt := range tests {
		subs, err := e.store.AllSubscriptionsForEvent(ctx, e.account.ID, webhooks.EventRunStarted, tt.jobID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range subs {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("job %q matched %v, want %v", tt.jobID, got, tt.want)
		}
	}
}

func TestSubscriptionsForEvent_PagesInIDOrderWithoutGapsOrRepeats(t *testing.T) {
	e := newEnv(t, false, nil)
	var want []string
	for i := range 7 {
		var jobs []int64
		if i%2 == 0 {
			jobs = []int64{42} // both branches of the query take part
		}
		sub, _ := e.subscribe(fmt.Sprintf("http://127.0.0.1:9/%d", i), allTypes, jobs, true)
		want = append(want, sub.ID)
	}
	e.subscribe("http://127.0.0.1:9/other-job", allTypes, []int64{7}, true)
	slices.Sort(want)
	in := deliveries.MatchInput{AccountID: e.account.ID, EventType: webhooks.EventRunStarted, JobID: "42", Limit: 3}
	var got []string
	var pages []int
	for range 10 { // bounded: 7 matches in pages of 3 take 3 pages
		page, err := e.store.SubscriptionsForEvent(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, len(page.Subscriptions))
		for _, s := range page.Subscriptions {
			got = append(got, s.ID)
		}
		if !page.More {
			break
		}
		in.After = page.Subscriptions[len(page.Subscriptions)-1].ID
	}
	if !slices.Equal(got, want) || !slices.Equal(pages, []int{3, 3, 1}) {
		t.Errorf("pages %v gave %v, want %v in pages [3 3 1]", pages, got, want)
	}
}
