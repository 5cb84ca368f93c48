package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

const testInternalToken = "whi_ingest_test_token_0123456789abcdef"

// withIngestion gives the API the dispatch service on the test's database
// (or on pool, when not nil) and a Temporal that never answers: events are
// stored without it, and their lanes' wake-ups fail in the background (the
// sweeper's job in production).
func withIngestion(t *testing.T, pool *pgxpool.Pool) testAPIOption {
	return func(a *testAPI, d *api.Deps) {
		tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1",
			Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tc.Close)
		if pool == nil {
			pool = a.DB.Pool
		}
		d.Config.InternalAPIToken = testInternalToken
		setDispatch(t, a, d, tc, pool)
	}
}

func ingestBody(accountID int64) map[string]any {
	return map[string]any{
		"accountId": accountID, "eventType": webhooks.EventRunStarted,
		"data": map[string]any{"jobId": 1, "runId": "2", "runStartedAt": "2026-01-02T03:04:05Z"},
	}
}

func internalBearer(tok string) http.Header {
	h := http.Header{}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	return h
}

func TestIngest_ValidationAndAuth(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events"
	tests := []struct {
		name      string
		header    http.Header
		body      any
		want      int
		wantField string
	}{
		{"NoToken", internalBearer(""), ingestBody(acct.ID), 401, ""},
		{"UserTokenIsNotInternal", internalBearer(a.mustCreateUser(t, acct.ID, "developer", "account_admin").Token), ingestBody(acct.ID), 401, ""},
		{"NotJSON", internalBearer(testInternalToken), "{", 400, ""},
		{"AccountIDFloat", internalBearer(testInternalToken), map[string]any{"accountId": 1.5, "eventType": "job.run.started", "data": map[string]any{}}, 400, "accountId"},
		{"UnknownAccount", internalBearer(testInternalToken), ingestBody(acct.ID + 1000), 400, "accountId"},
		{"RunStatusCodeText", internalBearer(testInternalToken), func() any {
			b := ingestBody(acct.ID)
			b["data"].(map[string]any)["runStatusCode"] = "ten"
			return b
		}(), 400, "data.runStatusCode"},
		{"DataNotAnObject", internalBearer(testInternalToken), map[string]any{"accountId": acct.ID, "eventType": "job.run.started", "data": "x"}, 400, "data must be of type object"},
		{"DataNull", internalBearer(testInternalToken), map[string]any{"accountId": acct.ID, "eventType": "job.run.started", "data": nil}, 400, "data"},
		{"EventIDObject", internalBearer(testInternalToken), func() any {
			b := ingestBody(acct.ID)
			b["eventId"] = map[string]any{"a": 1}
			return b
		}(), 400, "eventId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := doRequest(t, http.MethodPost, url, tt.header, tt.body)
			requireErrorEnvelope(t, r, tt.want)
			if tt.wantField != "" && !strings.Contains(r.Env.Status.DeveloperMessage, tt.wantField) {
				t.Errorf("error does not name %s: %s", tt.wantField, r.Body)
			}
		})
	}
	if strings.Contains(a.Logs.String(), testInternalToken) {
		t.Error("the internal token was logged")
	}
}

// Each string of an event's data is at most 2048 bytes: longer is refused,
// naming the field, never truncated.
func TestIngest_RejectsDataFieldsOver2048Bytes(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events"
	for _, field := range []string{
		"jobId", "jobName", "runId", "environmentId", "environmentName", "projectName", "projectId",
		"runStatusMessage", "runReason", "runStartedAt", "dbtVersion", "toolVersion",
	} {
		t.Run(field, func(t *testing.T) {
			b := ingestBody(acct.ID)
			b["data"].(map[string]any)[field] = strings.Repeat("7", api.MaxEventFieldBytes+1)
			r := doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), b)
			requireErrorEnvelope(t, r, http.StatusBadRequest)
			if !strings.Contains(r.Env.Status.DeveloperMessage, "data."+field) {
				t.Errorf("error does not name data.%s: %s", field, r.Body)
			}
		})
	}
	t.Run("AtTheLimitAccepted", func(t *testing.T) {
		b := ingestBody(acct.ID)
		b["data"].(map[string]any)["jobName"] = strings.Repeat("é", api.MaxEventFieldBytes/2) // 2048 bytes
		requireStatus(t, doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), b), http.StatusAccepted)
	})
}

// Ingestion needs PostgreSQL, not Temporal: an event is accepted once it
// and its deliveries are stored, and its webhook's lane is woken later.
func TestIngest_AcceptedWhileTemporalIsDown(t *testing.T) {
	var box *secrets.Box
	a := newTestAPI(t, withSubscriptions(t, &box, nil), withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	sub, _, err := subscriptions.NewStore(a.DB.Pool, box).Create(context.Background(), webhooks.Subscription{
		AccountID: acct.ID, Name: "Run alerts", ClientURL: "https://" + publicHost + "/hook",
		EventTypes: []string{webhooks.EventRunStarted}, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := doRequest(t, http.MethodPost, a.URL+"/internal/v1/job-run-events", internalBearer(testInternalToken), ingestBody(acct.ID))
	requireStatus(t, r, http.StatusAccepted)
	var out struct{ EventID string }
	r.decodeData(t, &out)
	d, err := deliveries.NewStore(a.DB.Pool).Delivery(context.Background(), acct.ID, sub.ID, testenv.DeliveryID(t, a.DB.Pool, out.EventID, sub.ID))
	if err != nil || d.Status != deliveries.StatusPending || d.AttemptCount != 0 {
		t.Errorf("delivery of the accepted event = %+v (%v), want pending", d, err)
	}
}

func TestIngest_DatabaseDownIsUnavailable(t *testing.T) {
	var closed *pgxpool.Pool
	a := newTestAPI(t, func(a *testAPI, d *api.Deps) {
		var err error
		if closed, err = pgxpool.New(context.Background(), a.DB.URL); err != nil {
			t.Fatal(err)
		}
		closed.Close()
		withIngestion(t, closed)(a, d)
	})
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	r := doRequest(t, http.MethodPost, a.URL+"/internal/v1/job-run-events", internalBearer(testInternalToken), ingestBody(acct.ID))
	requireErrorEnvelope(t, r, http.StatusServiceUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	r = doRequest(t, http.MethodPost, a.URL+"/internal/v1/job-run-events/batch", internalBearer(testInternalToken),
		map[string]any{"events": []any{ingestBody(acct.ID)}})
	requireErrorEnvelope(t, r, http.StatusServiceUnavailable)
}

func TestIngest_UnconfiguredTokenIsUnavailable(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil), func(_ *testAPI, d *api.Deps) { d.Config.InternalAPIToken = "" })
	h := internalBearer("anything-at-all-anything-at-all-anything")
	for _, path := range []string{"/internal/v1/job-run-events", "/internal/v1/job-run-events/batch"} {
		r := doRequest(t, http.MethodPost, a.URL+path, h, ingestBody(1))
		requireErrorEnvelope(t, r, http.StatusServiceUnavailable)
	}
}

func TestIngestBatch_RequestValidation(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events/batch"
	events := func(n int) map[string]any {
		evs := make([]any, n)
		for i := range evs {
			evs[i] = ingestBody(acct.ID)
		}
		return map[string]any{"events": evs}
	}
	tests := []struct {
		name      string
		header    http.Header
		body      any
		want      int
		wantField string
	}{
		{"NoToken", internalBearer(""), events(1), 401, ""},
		{"UserTokenIsNotInternal", internalBearer(a.mustCreateUser(t, acct.ID, "developer", "account_admin").Token), events(1), 401, ""},
		{"NotJSON", internalBearer(testInternalToken), "{", 400, ""},
		{"NoEvents", internalBearer(testInternalToken), map[string]any{}, 400, "events"},
		{"EmptyEvents", internalBearer(testInternalToken), events(0), 400, "events"},
		{"EventsNotAnArray", internalBearer(testInternalToken), map[string]any{"events": ingestBody(acct.ID)}, 400, "events"},
		{"TooManyEvents", internalBearer(testInternalToken), events(api.MaxBatchEvents + 1), 400, "events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := doRequest(t, http.MethodPost, url, tt.header, tt.body)
			requireErrorEnvelope(t, r, tt.want)
			if tt.wantField != "" && !strings.Contains(r.Env.Status.DeveloperMessage, tt.wantField) {
				t.Errorf("error does not name %s: %s", tt.wantField, r.Body)
			}
		})
	}
	t.Run("MaxEventsAccepted", func(t *testing.T) {
		r := doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), events(api.MaxBatchEvents))
		requireStatus(t, r, http.StatusAccepted)
		var out batchResponse
		r.decodeData(t, &out)
		if len(out.Results) != api.MaxBatchEvents {
			t.Fatalf("%d results, want %d", len(out.Results), api.MaxBatchEvents)
		}
		for i, res := range out.Results {
			if res.Index != i || res.EventID == "" || res.Error != nil {
				t.Fatalf("result %d = %+v, want accepted at its index", i, res)
			}
		}
	})
}

// batchResponse is the data of a batch ingestion response.
type batchResponse struct {
	Results []struct {
		Index     int    `json:"index"`
		EventID   string `json:"eventId"`
		Duplicate bool   `json:"duplicate"`
		Error     *struct {
			Field       string `json:"field"`
			UserMessage string `json:"user_message"`
		} `json:"error"`
	} `json:"results"`
}

// An invalid event of a batch is refused on its own, at its index; the
// others are stored.
func TestIngestBatch_PerEventErrorsAtTheirIndex(t *testing.T) {
	a := newTestAPI(t, withIngestion(t, nil))
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	url := a.URL + "/internal/v1/job-run-events/batch"
	seen := ingestBody(acct.ID)
	seen["eventId"] = "run-2-started"
	r := doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), map[string]any{"events": []any{seen}})
	requireStatus(t, r, http.StatusAccepted)
	var before batchResponse
	r.decodeData(t, &before)
	if len(before.Results) != 1 || before.Results[0].EventID != dispatch.EventIDFor(acct.ID, "run-2-started") || before.Results[0].Duplicate {
		t.Fatalf("first ingestion = %+v, want new event %s", before.Results, dispatch.EventIDFor(acct.ID, "run-2-started"))
	}

	mutate := func(f func(map[string]any)) map[string]any {
		b := ingestBody(acct.ID)
		f(b)
		return b
	}
	batch := []any{
		ingestBody(acct.ID),
		mutate(func(b map[string]any) { b["eventType"] = "job.run.paused" }),
		seen,
		mutate(func(b map[string]any) { b["accountId"] = acct.ID + 1000 }),
		mutate(func(b map[string]any) {
			b["data"].(map[string]any)["jobName"] = strings.Repeat("x", api.MaxEventFieldBytes+1)
		}),
		mutate(func(b map[string]any) { delete(b, "data") }),
		mutate(func(b map[string]any) { b["data"].(map[string]any)["runStartedAt"] = "yesterday" }),
		mutate(func(b map[string]any) { b["eventId"] = "run-3-started" }),
	}
	wantErrField := map[int]string{1: "eventType", 3: "accountId", 4: "data.jobName", 5: "data", 6: "data.runStartedAt"}
	r = doRequest(t, http.MethodPost, url, internalBearer(testInternalToken), map[string]any{"events": batch})
	requireStatus(t, r, http.StatusAccepted)
	var out batchResponse
	r.decodeData(t, &out)
	if len(out.Results) != len(batch) {
		t.Fatalf("%d results for %d events: %s", len(out.Results), len(batch), r.Body)
	}
	ids := map[string]bool{}
	for i, res := range out.Results {
		raw, _ := json.Marshal(res)
		if res.Index != i {
			t.Errorf("result %d has index %d", i, res.Index)
		}
		if field, bad := wantErrField[i]; bad {
			if res.Error == nil || res.Error.Field != field || res.Error.UserMessage == "" || res.EventID != "" {
				t.Errorf("result %d = %s, want an error naming %s and no event id", i, raw, field)
			}
			continue
		}
		if res.Error != nil || res.EventID == "" || ids[res.EventID] {
			t.Errorf("result %d = %s, want its own accepted event", i, raw)
		}
		ids[res.EventID] = true
		if want := i == 2; res.Duplicate != want {
			t.Errorf("result %d duplicate = %v, want %v", i, res.Duplicate, want)
		}
	}
	if out.Results[2].EventID != before.Results[0].EventID {
		t.Errorf("the event seen before got id %s, want %s", out.Results[2].EventID, before.Results[0].EventID)
	}
	if want := dispatch.EventIDFor(acct.ID, "run-3-started"); out.Results[7].EventID != want {
		t.Errorf("caller event id gave %s, want %s", out.Results[7].EventID, want)
	}
}
