package deliveries

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
)

// State change (docs/delivery.md): a webhook with notify_on
// "state_change" (or format "pagerduty") follows each job's state, failing
// or not, in webhook_job_states, and gets an outcome's delivery only when
// it flips that state: job.run.errored when the job was not failing (its
// first failure), job.run.completed when it was (its recovery), and
// job.run.started never. IngestEvents decides it in the statement that
// stores the event, so its deliveries and the state always agree. Runs
// are followed in the order of their outcomes: by OutcomeTime, then by
// RunOrderKey; an outcome older than the one a state reflects changes
// nothing.

// OutcomeTime is when a run's outcome happened, as state change orders
// outcomes: runErroredAt of job.run.errored, runFinishedAt of
// job.run.completed (either falling back to the other, then to
// runStartedAt); zero when the event has none of them (IngestEvents then
// takes the time of its ingestion), or is not an outcome.
func OutcomeTime(eventType string, d webhooks.RunData) time.Time {
	var order []string
	switch eventType {
	case webhooks.EventRunErrored:
		order = []string{d.RunErroredAt, d.RunFinishedAt, d.RunStartedAt}
	case webhooks.EventRunCompleted:
		order = []string{d.RunFinishedAt, d.RunErroredAt, d.RunStartedAt}
	default:
		return time.Time{}
	}
	for _, s := range order {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// RunOrderKey orders runs of one job whose outcomes have the same time,
// compared byte by byte: no run id first, then run ids of digits only by
// their number, then any other id as text.
func RunOrderKey(runID string) []byte {
	if runID == "" {
		return []byte("a")
	}
	if digits := strings.TrimLeft(runID, "0"); strings.Trim(runID, "0123456789") == "" {
		// "n", the number's length in 4 digits, then the number itself:
		// a longer number is a larger one. Ids are at most a few KB.
		return []byte("n" + fmt.Sprintf("%04d", len(digits)) + digits)
	}
	return []byte("t" + runID)
}

// FailingJob is a job a state-change webhook sees failing.
type FailingJob struct {
	JobID        string
	FailingSince time.Time
	// LastRunID and LastOutcomeAt are the newest outcome seen.
	LastRunID     string
	LastOutcomeAt time.Time
}

// MaxFailingJobsShown bounds the failing jobs a webhook's health lists.
const MaxFailingJobsShown = 100

// FailingJobs returns the webhook's failing jobs, longest failing first
// (at most MaxFailingJobsShown), and how many there are.
func (s *Store) FailingJobs(ctx context.Context, accountID int64, subscriptionID string) ([]FailingJob, int, error) {
	rows, err := s.q.WebhookJobStates(ctx, dbq.WebhookJobStatesParams{
		SubscriptionID: subscriptionID, AccountID: accountID, MaxJobs: MaxFailingJobsShown})
	if err != nil {
		return nil, 0, fmt.Errorf("failing jobs of %s: %w", subscriptionID, err)
	}
	out := make([]FailingJob, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = FailingJob{JobID: r.JobID, FailingSince: r.FailingSince, LastRunID: r.OutcomeRunID, LastOutcomeAt: r.OutcomeAt}
		total = int(r.FailingJobs)
	}
	return out, total, nil
}
