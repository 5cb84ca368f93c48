package topology

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// CreateWebhookForJobs subscribes clientURL to every event type of
// accountID, for jobIDs (none: every job), and returns its id and secret.
func (a API) CreateWebhookForJobs(ctx context.Context, accountID int64, name, clientURL string, jobIDs []int64) (id, secret string, err error) {
	var out struct {
		Data struct {
			ID         string `json:"id"`
			HMACSecret string `json:"hmac_secret"`
		} `json:"data"`
	}
	if jobIDs == nil {
		jobIDs = []int64{}
	}
	_, err = a.do(ctx, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscriptions", accountID), "Token "+a.Token, map[string]any{
		"name": name, "client_url": clientURL, "active": true, "description": "chaos audit",
		"event_types": []string{"job.run.started", "job.run.completed", "job.run.errored"}, "job_ids": jobIDs,
	}, &out)
	return out.Data.ID, out.Data.HMACSecret, err
}

// SetActive activates or deactivates a webhook (PUT with only active).
func (a API) SetActive(ctx context.Context, accountID int64, webhookID string, active bool) error {
	_, err := a.do(ctx, http.MethodPut, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscription/%s", accountID, webhookID),
		"Token "+a.Token, map[string]any{"active": active}, nil)
	return err
}

// RotateSecret gives a webhook a new secret and returns it.
func (a API) RotateSecret(ctx context.Context, accountID int64, webhookID string) (string, error) {
	var out struct {
		Data struct {
			HMACSecret string `json:"hmac_secret"`
		} `json:"data"`
	}
	_, err := a.do(ctx, http.MethodPost, fmt.Sprintf("/api/v3/accounts/%d/webhooks/subscription/%s/secret/rotate", accountID, webhookID),
		"Token "+a.Token, map[string]any{}, &out)
	if err == nil && out.Data.HMACSecret == "" {
		err = fmt.Errorf("rotate %s: no secret in the answer", webhookID)
	}
	return out.Data.HMACSecret, err
}

// SendTarget is an account and job that events are sent for.
type SendTarget struct {
	AccountID int64
	JobID     int64
}

// SteadySender posts job.run.completed events at a steady rate, in turn
// over its targets, through the ingestion endpoint, and keeps every event
// answered 202. A request that fails in any way (503 during a database
// outage, connection refused while the API is down) is sent again with
// the same eventId, which is idempotent, until it is accepted or the
// sender is told to give up.
type SteadySender struct {
	API     API
	Targets []SendTarget
	Rate    float64 // events a second
	Prefix  string  // of the caller's eventIds
	// OnAccept, when set, is told each event answered 202 instead of the
	// sender keeping it (Accepted then returns none): an hour's soak would
	// keep a million.
	OnAccept func(AcceptedEvent)

	mu       sync.Mutex
	accepted []AcceptedEvent
	retries  atomic.Int64
	refused  atomic.Int64 // events given up on: never answered 202
}

// Run sends until stop is closed, then finishes the events in flight until
// ctx ends. It returns when every sender goroutine has.
func (s *SteadySender) Run(ctx context.Context, stop <-chan struct{}, concurrency int) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	interval := time.Duration(float64(time.Second) / s.Rate)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
					select {
					case <-stop:
						return
					case <-time.After(wait):
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				s.send(ctx, i)
			}
		}()
	}
	wg.Wait()
}

func (s *SteadySender) send(ctx context.Context, i int) {
	t := s.Targets[i%len(s.Targets)]
	callerID := fmt.Sprintf("%s-%d", s.Prefix, i)
	backoff := 250 * time.Millisecond
	for {
		reqCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		id, status, err := s.API.ingest(reqCtx, Event{AccountID: t.AccountID, JobID: t.JobID}, callerID, i)
		cancel()
		if err == nil && status == http.StatusAccepted {
			e := AcceptedEvent{ID: id, AccountID: t.AccountID, JobID: t.JobID, At: time.Now()}
			if s.OnAccept != nil {
				s.OnAccept(e)
				return
			}
			s.mu.Lock()
			s.accepted = append(s.accepted, e)
			s.mu.Unlock()
			return
		}
		if status >= 400 && status < 500 && status != http.StatusTooManyRequests {
			s.refused.Add(1) // the event itself is refused: sending it again changes nothing
			return
		}
		s.retries.Add(1)
		select {
		case <-ctx.Done():
			s.refused.Add(1)
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// Accepted returns the events answered 202 so far.
func (s *SteadySender) Accepted() []AcceptedEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AcceptedEvent(nil), s.accepted...)
}

// Retries is how many requests were sent again; Refused how many events
// were never accepted.
func (s *SteadySender) Retries() int64 { return s.retries.Load() }
func (s *SteadySender) Refused() int64 { return s.refused.Load() }
