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
	eventType := e.Type
	if eventType == "" {
		eventType = "job.run.completed"
	}
	if e.Run != 0 {
		runID = e.Run
	}
	status, err := a.do(ctx, http.MethodPost, "/internal/v1/job-run-events", "Bearer "+a.InternalToken, map[string]any{
		"accountId": e.AccountID, "eventType": eventType, "eventId": callerEventID,
		"data": map[string]any{
			"jobId": strconv.FormatInt(e.JobID, 10), "jobName": "Nightly", "runId": strconv.Itoa(runID),
			"environmentId": "7", "environmentName": "Production", "toolVersion": "1.9.0",
			"projectName": "Analytics", "projectId": "3",
			"runStatus": "Success", "runStatusCode": 10, "runStatusMessage": "None", "runReason": "scheduled",
			"runStartedAt": "2026-01-01T00:00:00Z", "runFinishedAt": "2026-01-01T00:05:00Z",
		},
	}, &out)
	return out.Data.EventID, status, err
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
// earlier than i*interval after the start). Each accepted event is noted
// on r, with the webhooks it must reach. Like a real caller, a sender
// retries a 503 with the same event id, which is idempotent.
func (a API) Send(ctx context.Context, r *Receiver, prefix string, events []Event, concurrency int, interval time.Duration) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(events) || ctx.Err() != nil {
					return
				}
				if interval > 0 {
					if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
						time.Sleep(wait)
					}
				}
				sent := time.Now()
				id, err := a.ingestRetrying(ctx, events[i], fmt.Sprintf("%s-%d", prefix, i), i)
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				r.Accepted(id, time.Now())
				r.Answered(time.Since(sent))
				r.Expect(id, events[i].Webhooks)
			}
		}()
	}
	wg.Wait()
	return first
}

func (a API) ingestRetrying(ctx context.Context, e Event, callerEventID string, runID int) (string, error) {
	for attempt := 1; ; attempt++ {
		id, status, err := a.ingest(ctx, e, callerEventID, runID)
		if status != http.StatusServiceUnavailable || attempt == 5 {
			return id, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
}
