package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

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
		// wantGap is the least time between the first two arrivals.
		wantGap time.Duration
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
			wantKinds: []string{deliveries.KindHTTPStatus, deliveries.KindHTTPStatus, ""}, wantArrived: 3,
		},
		{
			name: "AlwaysFailingStopsAfterSixAttempts", respond: status(500), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{500, 500, 500, 500, 500, 500}, wantArrived: deliveries.MaxAttempts,
		},
		{
			name: "GoneStopsAtOnce", respond: status(410), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{410}, wantKinds: []string{deliveries.KindHTTPStatus}, wantArrived: 1,
		},
		{
			name: "BadRequestStopsAtOnce", respond: status(400), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{400}, wantArrived: 1,
		},
		{
			name: "NotFoundStopsAtOnce", respond: status(404), wantStatus: deliveries.StatusFailed,
			wantCodes: []int{404}, wantArrived: 1,
		},
		{
			name: "RequestTimeoutRetried",
			respond: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.WriteHeader(408)
					return
				}
				w.WriteHeader(200)
			},
			wantStatus: deliveries.StatusSucceeded, wantCodes: []int{408, 200}, wantArrived: 2,
		},
		{
			// Retry-After lengthens the 100ms backoff of this configuration.
			name: "TooManyRequestsRetriedAfterRetryAfter",
			respond: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(429)
					return
				}
				w.WriteHeader(204)
			},
			wantStatus: deliveries.StatusSucceeded, wantCodes: []int{429, 204}, wantArrived: 2,
			wantGap: 900 * time.Millisecond,
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
			wantKinds: slices.Repeat([]string{deliveries.KindConnection}, 6),
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
			wantKinds: []string{deliveries.KindTimeout, ""}, wantArrived: 2,
		},
	}
	// The spec's first try and five retries, with the defaults: the
	// endpoint breaker opens after five outage failures, and the sixth
	// attempt goes all the same (on_outage "retry").
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
			ev := e.ingest(webhooks.EventRunStarted, jobID, "", sub.ID)
			rec := e.record(ev, sub.ID)
			var codes []int
			var kinds []string
			for k, a := range rec.Attempts {
				codes = append(codes, a.StatusCode)
				kinds = append(kinds, a.ErrorKind)
				if a.Number != k+1 {
					t.Errorf("attempt row %d is numbered %d", k, a.Number)
				}
			}
			if rec.Status != tt.wantStatus || !slices.Equal(codes, tt.wantCodes) || rec.AttemptCount != len(tt.wantCodes) {
				t.Errorf("record status %s attempt_count %d codes %v, want %s %d %v", rec.Status, rec.AttemptCount, codes,
					tt.wantStatus, len(tt.wantCodes), tt.wantCodes)
			}
			if tt.wantKinds != nil && !slices.Equal(kinds, tt.wantKinds) {
				t.Errorf("error kinds = %q, want %q", kinds, tt.wantKinds)
			}
			if want := tt.wantCodes[len(tt.wantCodes)-1]; rec.LastStatusCode != want || rec.CompletedAt == nil {
				t.Errorf("record last_status_code %d completed_at %v, want %d and set", rec.LastStatusCode, rec.CompletedAt, want)
			}
			// The subscription keeps the latest HTTP status received: an
			// attempt without a response leaves http_status_code as it was.
			after, err := e.subs.Get(context.Background(), e.account.ID, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := lastResponse(tt.wantCodes); after.HTTPStatusCode != want || after.DispatchedAt == nil {
				t.Errorf("subscription http_status_code %d dispatched_at %v, want %d and set", after.HTTPStatusCode, after.DispatchedAt, want)
			}
			got := rc.got()
			if len(got) != tt.wantArrived {
				t.Errorf("receiver got %d requests, want %d", len(got), tt.wantArrived)
			}
			wantID := e.deliveryID(ev, sub.ID)
			for k, r := range got {
				if r.Path == "/elsewhere" {
					t.Errorf("redirect was followed")
				}
				if string(r.Body) != string(got[0].Body) {
					t.Errorf("attempt %d sent a different body", k+1)
				}
				if h := r.Header.Get(webhooks.HeaderDeliveryID); h != wantID {
					t.Errorf("attempt %d: %s = %q, want %q on every attempt", k+1, webhooks.HeaderDeliveryID, h, wantID)
				}
				if h := r.Header.Get(webhooks.HeaderAttempt); h != strconv.Itoa(k+1) {
					t.Errorf("request %d: %s = %q, want %d", k+1, webhooks.HeaderAttempt, h, k+1)
				}
				if !r.Signed {
					t.Errorf("attempt %d is not signed", k+1)
				}
			}
			if tt.wantGap > 0 && len(got) >= 2 {
				if gap := got[1].ArrivedAt.Sub(got[0].ArrivedAt); gap < tt.wantGap {
					t.Errorf("second attempt %v after the first, want at least %v", gap, tt.wantGap)
				}
			}
			if len(got) > 0 && string(rec.Payload) != string(got[0].Body) {
				t.Errorf("recorded payload differs from the body sent")
			}
		})
	}
}

// lastResponse is the last non-zero status code (0 when none answered).
func lastResponse(codes []int) int {
	for i := len(codes) - 1; i >= 0; i-- {
		if codes[i] != 0 {
			return codes[i]
		}
	}
	return 0
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
	if rec.Status != deliveries.StatusCancelled || rec.AttemptCount != 1 || len(rec.Attempts) != 1 || rec.CompletedAt == nil {
		t.Errorf("record = %s after %d attempts (%d rows, completed %v), want cancelled after 1", rec.Status,
			rec.AttemptCount, len(rec.Attempts), rec.CompletedAt)
	}
}

func TestIngest_DuplicateEventIDDeliversOnce(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, _ := e.subscribe(rc.URL, allTypes, nil, true)
	// Caller ids unique per run: the dev server outlives one test (-count=N)
	// while account ids restart in each fresh database.
	callerID := "run-77-completed-" + webhooks.NewID("")
	first := e.ingest(webhooks.EventRunCompleted, 5, callerID, sub.ID)
	second := e.ingest(webhooks.EventRunCompleted, 5, callerID, sub.ID)
	if first != second {
		t.Fatalf("same caller eventId gave %s then %s", first, second)
	}
	other := e.ingest(webhooks.EventRunCompleted, 5, "run-78-completed-"+webhooks.NewID(""), sub.ID)
	if other == first {
		t.Errorf("different caller eventIds share %s", other)
	}
	// The other event's delivery is final, and the lane takes deliveries in
	// order: a second delivery of the first event would have come by now.
	if n := len(rc.got()); n != 2 {
		t.Errorf("receiver got %d deliveries, want 2 (one per distinct event)", n)
	}
	_, total, err := e.store.ListDeliveries(context.Background(), e.account.ID, sub.ID, deliveries.ListFilter{Limit: 10})
	if err != nil || total != 2 {
		t.Errorf("%d delivery records (%v), want 2", total, err)
	}
	if rec := e.record(first, sub.ID); rec.AttemptCount != 1 || len(rec.Attempts) != 1 {
		t.Errorf("duplicated event's delivery: %d attempts, want 1", rec.AttemptCount)
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
		{name: "JobIDLongerThan2048Bytes", mutate: func(b map[string]any) { b["data"].(map[string]any)["jobId"] = strings.Repeat("9", 2049) }, wantCode: 400, wantField: "data.jobId"},
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
	if rec.AttemptCount != 1 || len(rec.Attempts) != 1 || rec.Attempts[0].ErrorKind != deliveries.KindNotAllowed {
		t.Errorf("attempt_count %d, attempts = %+v, want one not_allowed", rec.AttemptCount, rec.Attempts)
	}
	if n := len(rc.got()); n != 0 {
		t.Errorf("receiver reached %d times", n)
	}
}

// postJobID ingests an event whose data.jobId is jobID as given (a JSON
// string), without waiting for its deliveries.
func (e *env) postJobID(eventType, jobID string) string {
	e.t.Helper()
	data := runData(1, eventType)
	data["jobId"] = jobID
	body := map[string]any{"accountId": e.account.ID, "eventType": eventType, "data": data}
	code, out := e.call(http.MethodPost, "/internal/v1/job-run-events", e.cfg.InternalAPIToken, body)
	if code != http.StatusAccepted {
		e.t.Fatalf("ingest job %q: %d %v", jobID, code, out)
	}
	return out["data"].(map[string]any)["eventId"].(string)
}

// Deliveries are claimed at ingestion, so which webhooks an event matched
// is known as soon as it is accepted, worker or not.
func TestIngest_JobIDThatIsNotANumberMatchesOnlyAllJobsWebhooks(t *testing.T) {
	e := newEnv(t, false, nil)
	allJobs, _ := e.subscribe("http://127.0.0.1:9/all", allTypes, nil, true)
	forJob42, _ := e.subscribe("http://127.0.0.1:9/42", allTypes, []int64{42}, true)
	tests := []struct {
		jobID string
		want  []string
	}{
		{"42", []string{allJobs.ID, forJob42.ID}},
		{"7", []string{allJobs.ID}},
		{"job-42", []string{allJobs.ID}},
		{"42.0", []string{allJobs.ID}},
		{"-42", []string{allJobs.ID}},
		{"99999999999999999999", []string{allJobs.ID}}, // beyond bigint
	}
	for _, tt := range tests {
		t.Run(tt.jobID, func(t *testing.T) {
			ev := e.postJobID(webhooks.EventRunStarted, tt.jobID)
			var got []string
			for _, sub := range []string{allJobs.ID, forJob42.ID} {
				id, made := e.madeDelivery(ev, sub)
				if !made {
					continue
				}
				got = append(got, sub)
				d, err := e.store.Delivery(context.Background(), e.account.ID, sub, id)
				if err != nil {
					t.Fatal(err)
				}
				if d.JobID != tt.jobID {
					t.Errorf("delivery to %s records job %q, want %q", sub, d.JobID, tt.jobID)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("job %q matched %v, want %v", tt.jobID, got, tt.want)
			}
		})
	}
}

// More webhooks match than a lane round takes (DELIVERY_PAGE_SIZE), and
// each webhook gets more events than a round takes: every event reaches
// every matching webhook exactly once.
func TestIngest_FanOutBeyondPageSizeDeliversEachOnce(t *testing.T) {
	const pageSize, hooks, events = 3, 7, 4
	e := newEnv(t, true, map[string]string{"DELIVERY_PAGE_SIZE": strconv.Itoa(pageSize)})
	rc := newReceiver(t, nil)
	var subs []string
	for i := range hooks {
		var jobs []int64
		if i%2 == 0 {
			jobs = []int64{42} // both kinds of match take part
		}
		sub, _ := e.subscribe(fmt.Sprintf("%s/%d", rc.URL, i), allTypes, jobs, true)
		subs = append(subs, sub.ID)
	}
	other, _ := e.subscribe(rc.URL+"/other-job", allTypes, []int64{7}, true)
	var evs []string
	for range events {
		evs = append(evs, e.post(webhooks.EventRunStarted, 42, ""))
	}
	for _, ev := range evs {
		for _, sub := range subs {
			if d := e.waitDelivery(ev, sub); d.Status != deliveries.StatusSucceeded || d.AttemptCount != 1 {
				t.Errorf("%s to %s: %s after %d attempts", ev, sub, d.Status, d.AttemptCount)
			}
		}
	}
	arrivals := map[string]int{}
	for _, r := range rc.got() {
		arrivals[r.Path+" "+mustJSON(t, r.Body)["eventId"].(string)]++
	}
	for i := range hooks {
		for _, ev := range evs {
			if n := arrivals[fmt.Sprintf("/%d %s", i, ev)]; n != 1 {
				t.Errorf("webhook %d got event %s %d times, want once", i, ev, n)
			}
		}
	}
	if n := len(rc.got()); n != hooks*events {
		t.Errorf("receiver got %d requests, want %d", n, hooks*events)
	}
	if _, total, err := e.store.ListDeliveries(context.Background(), e.account.ID, other.ID, deliveries.ListFilter{Limit: 10}); err != nil || total != 0 {
		t.Errorf("webhook of another job has %d deliveries (%v)", total, err)
	}
}

// TestDeliver_LateAnswerIsRecordedAndRetried: a receiver that answers 200
// after the deadline fails the attempt (a timeout, retried: the spec's
// limit stands), and its late answer is recorded on that attempt and shown
// by the API.
func TestDeliver_LateAnswerIsRecordedAndRetried(t *testing.T) {
	e := newEnv(t, true, map[string]string{"DELIVERY_TIMEOUT": "1s", "DELIVERY_LATE_ANSWER_WAIT": "5s"})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	})
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.ingest(webhooks.EventRunStarted, 1, "", sub.ID)
	var d deliveries.Delivery
	waitFor(t, func() bool {
		d = e.record(id, sub.ID)
		return len(d.Attempts) == 2 && d.Attempts[0].LateStatusCode != 0
	})
	first, second := d.Attempts[0], d.Attempts[1]
	if d.Status != deliveries.StatusSucceeded || first.ErrorKind != deliveries.KindTimeout || first.StatusCode != 0 ||
		first.LateStatusCode != http.StatusOK || first.LateAfter < 1500*time.Millisecond || second.StatusCode != http.StatusOK {
		t.Fatalf("delivery %s; attempt 1 %+v; attempt 2 %+v", d.Status, first, second)
	}
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/deliveries/"+d.ID), e.token, nil)
	attempts := out["data"].(map[string]any)["attempts"].([]any)
	a1, a2 := attempts[0].(map[string]any), attempts[1].(map[string]any)
	if code != http.StatusOK || a1["late_status_code"] != "200" || a1["late_after_ms"].(float64) < 1500 || a2["late_status_code"] != nil {
		t.Errorf("API attempts: %v / %v", a1, a2)
	}
}

// TestDeliver_RenamedBetweenAttemptsSendsTheFirstAttemptsBody: a spec
// body is kept as the webhook's name it was built with (migration 00031)
// and built again for every later attempt: a webhook renamed after its
// first attempt still gets the first attempt's bytes, and Recent
// Deliveries shows them.
func TestDeliver_RenamedBetweenAttemptsSendsTheFirstAttemptsBody(t *testing.T) {
	e := newEnv(t, true, nil)
	renamed := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-renamed // the rename lands before this attempt's answer
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	})
	sub, secret := e.subscribe(rc.URL+"/hook", allTypes, []int64{7}, true)
	rc.setSecret(secret)
	go func() {
		defer close(renamed)
		for len(rc.got()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		name := "renamed after the first attempt"
		if _, err := e.subs.Update(context.Background(), e.account.ID, sub.ID, webhooks.SubscriptionUpdate{Name: &name}); err != nil {
			t.Error(err)
		}
	}()
	ev := e.ingest(webhooks.EventRunCompleted, 7, "", sub.ID)
	rec := e.record(ev, sub.ID)
	got := rc.got()
	if rec.Status != deliveries.StatusSucceeded || len(got) != 2 {
		t.Fatalf("record %s after %d requests, want succeeded after 2", rec.Status, len(got))
	}
	if string(got[1].Body) != string(got[0].Body) || string(rec.Payload) != string(got[0].Body) {
		t.Errorf("bodies: first %s, second %s, recorded %s; want one body", got[0].Body, got[1].Body, rec.Payload)
	}
	if name := mustJSON(t, got[1].Body)["webhookName"]; name != sub.Name {
		t.Errorf("the retry's webhookName %v, want the first attempt's %q", name, sub.Name)
	}
}
