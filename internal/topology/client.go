package topology

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// API is a client of one webhooks API process.
type API struct {
	BaseURL       string
	Token         string // account service token
	InternalToken string // INTERNAL_API_TOKEN
	HTTP          *http.Client
	// Batch > 1 has Send post that many events a request, to the batch
	// endpoint (POST /internal/v1/job-run-events/batch); otherwise one
	// event a request.
	Batch int
}

func (a API) do(ctx context.Context, method, path, auth string, body any, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, method, a.BaseURL+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %s: %w", method, path, raw, err)
		}
	}
	return resp.StatusCode, nil
}

// CreateWebhook subscribes clientURL to every event type of accountID and
// returns its id and secret.
func (a API) CreateWebhook(ctx context.Context, accountID int64, name, clientURL string) (id, secret string, err error) {
	var out struct {
		Data struct {
			ID         string `json:"id"`
			HMACSecret string `json:"hmac_secret"`
		} `json:"data"`
	}
	_, err = a.do(ctx, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", accountID), "Token "+a.Token, map[string]any{
		"name": name, "client_url": clientURL, "active": true, "description": "topology test",
		"event_types": []string{"job.run.started", "job.run.completed", "job.run.errored"}, "job_ids": []int{},
	}, &out)
	return out.Data.ID, out.Data.HMACSecret, err
}

// CreateWebhookForJob creates a webhook of accountID for one job only.
func (a API) CreateWebhookForJob(ctx context.Context, accountID int64, name, clientURL string, jobID int64) (id, secret string, err error) {
	var out struct {
		Data struct {
			ID         string `json:"id"`
			HMACSecret string `json:"hmac_secret"`
		} `json:"data"`
	}
	_, err = a.do(ctx, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", accountID), "Token "+a.Token, map[string]any{
		"name": name, "client_url": clientURL, "active": true, "description": "topology test",
		"event_types": []string{"job.run.started", "job.run.completed", "job.run.errored"}, "job_ids": []int64{jobID},
	}, &out)
	return out.Data.ID, out.Data.HMACSecret, err
}

// Ingest posts one job.run.completed event of job 42 and returns its event
// id.
func (a API) Ingest(ctx context.Context, accountID int64, callerEventID string, runID int) (string, error) {
	id, _, err := a.ingest(ctx, Event{AccountID: accountID, JobID: concentratedJob}, callerEventID, runID)
	return id, err
}

func (a API) ingest(ctx context.Context, e Event, callerEventID string, runID int) (string, int, error) {
	var out struct {
		Data struct {
			EventID string `json:"eventId"`
		} `json:"data"`
	}
	status, err := a.do(ctx, http.MethodPost, "/internal/v1/job-run-events", "Bearer "+a.InternalToken, ingestBody(e, callerEventID, runID), &out)
	return out.Data.EventID, status, err
}

// ingestBatch posts events (their caller ids callerEventIDs[i], run ids
// firstRun+i) in one request to the batch endpoint and returns each one's
// id; an event the batch refused fails it.
func (a API) ingestBatch(ctx context.Context, events []Event, callerEventIDs []string, firstRun int) ([]string, int, error) {
	bodies := make([]map[string]any, len(events))
	for i, e := range events {
		bodies[i] = ingestBody(e, callerEventIDs[i], firstRun+i)
	}
	var out struct {
		Data struct {
			Results []struct {
				Index   int             `json:"index"`
				EventID string          `json:"eventId"`
				Error   json.RawMessage `json:"error"`
			} `json:"results"`
		} `json:"data"`
	}
	status, err := a.do(ctx, http.MethodPost, "/internal/v1/job-run-events/batch", "Bearer "+a.InternalToken, map[string]any{"events": bodies}, &out)
	if err != nil {
		return nil, status, err
	}
	ids := make([]string, len(events))
	for _, r := range out.Data.Results {
		if r.Index < 0 || r.Index >= len(ids) || len(r.Error) > 0 {
			return nil, status, fmt.Errorf("batch: event %d: %s", r.Index, r.Error)
		}
		ids[r.Index] = r.EventID
	}
	for i, id := range ids {
		if id == "" {
			return nil, status, fmt.Errorf("batch: no result for event %d", i)
		}
	}
	return ids, status, nil
}

// ingestBody is the ingestion request of event e.
func ingestBody(e Event, callerEventID string, runID int) map[string]any {
	eventType := e.Type
	if eventType == "" {
		eventType = "job.run.completed"
	}
	if e.Run != 0 {
		runID = e.Run
	}
	return map[string]any{
		"accountId": e.AccountID, "eventType": eventType, "eventId": callerEventID,
		"data": map[string]any{
			"jobId": strconv.FormatInt(e.JobID, 10), "jobName": "Nightly", "runId": strconv.Itoa(runID),
			"environmentId": "7", "environmentName": "Production", "toolVersion": "1.9.0",
			"projectName": "Analytics", "projectId": "3",
			"runStatus": "Success", "runStatusCode": 10, "runStatusMessage": "None", "runReason": "scheduled",
			"runStartedAt": "2026-01-01T00:00:00Z", "runFinishedAt": "2026-01-01T00:05:00Z",
		},
	}
}

// Event is one event to send, and the webhooks it must reach.
type Event struct {
	AccountID int64
	JobID     int64
	Webhooks  []string // ids; each must receive it exactly once
	Type      string   // "": job.run.completed
	Run       int      // the run id; 0: the sender's index
}

// SendEvents posts events job.run.completed events of job 42 for accountID
// (see Send), expecting nothing in particular of r.
func (a API) SendEvents(ctx context.Context, r *Receiver, accountID int64, prefix string, events, concurrency int, interval time.Duration) error {
	evs := make([]Event, events)
	for i := range evs {
		evs[i] = Event{AccountID: accountID, JobID: concentratedJob}
	}
	return a.Send(ctx, r, prefix, evs, concurrency, interval)
}

// Send posts events from concurrency senders, with caller event ids
// prefix-0, prefix-1, ...; interval > 0 paces them (event i is sent no
// earlier than i*interval after the start; with Batch, a request's first
// event's time is the request's). Each accepted event is noted on r, with
// the webhooks it must reach. Like a real caller, a sender retries a 503
// with the same event ids, which is idempotent.
func (a API) Send(ctx context.Context, r *Receiver, prefix string, events []Event, concurrency int, interval time.Duration) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	batch := max(a.Batch, 1)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := (int(next.Add(1)) - 1) * batch
				if from >= len(events) || ctx.Err() != nil {
					return
				}
				to := min(from+batch, len(events))
				if interval > 0 {
					if wait := time.Until(start.Add(time.Duration(from) * interval)); wait > 0 {
						time.Sleep(wait)
					}
				}
				sent := time.Now()
				ids, err := a.ingestRetrying(ctx, events[from:to], prefix, from)
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				answered := time.Now()
				for j, id := range ids {
					r.Accepted(id, answered)
					r.Answered(answered.Sub(sent))
					r.Expect(id, events[from+j].Webhooks)
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// ingestRetrying posts events (one a request unless Batch; caller ids
// prefix-from, prefix-from+1, ...) and retries a 503 up to five times.
func (a API) ingestRetrying(ctx context.Context, events []Event, prefix string, from int) ([]string, error) {
	callerIDs := make([]string, len(events))
	for i := range events {
		callerIDs[i] = fmt.Sprintf("%s-%d", prefix, from+i)
	}
	for attempt := 1; ; attempt++ {
		var ids []string
		var status int
		var err error
		if a.Batch > 1 {
			ids, status, err = a.ingestBatch(ctx, events, callerIDs, from)
		} else {
			var id string
			id, status, err = a.ingest(ctx, events[0], callerIDs[0], from)
			ids = []string{id}
		}
		if status != http.StatusServiceUnavailable || attempt == 5 {
			return ids, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
}
