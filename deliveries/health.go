package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
)

// Counts are numbers of the last 24 hours and of the last 7 days.
type Counts struct {
	Last24h, Last7d int64
}

// Health is how a webhook's deliveries are going, from the records of the
// last 7 days and its failure streak.
type Health struct {
	Active bool
	// FailedInARow counts the failed deliveries since the last success,
	// failing since FailingSince (nil: the last delivery did not fail).
	FailedInARow int
	FailingSince *time.Time
	// DisabledAt and DisabledReason are set when the webhook was
	// deactivated automatically (cleared when it is activated again).
	DisabledAt     *time.Time
	DisabledReason string
	// Deliveries by status and attempts by outcome ("success" or the
	// error kind).
	Deliveries map[string]Counts
	Attempts   map[string]Counts
	// LastSuccessAt and LastFailureAt are within the last 7 days.
	LastSuccessAt, LastFailureAt *time.Time
	// AttemptP50 and AttemptP95 are over the last 100 attempts.
	AttemptP50, AttemptP95 time.Duration
	// StateChange says whether the webhook follows its jobs' states
	// (notify_on state_change, or format pagerduty); FailingJobs are those
	// failing (at most MaxFailingJobsShown, longest failing first) of
	// FailingJobsTotal.
	StateChange      bool
	FailingJobs      []FailingJob
	FailingJobsTotal int
}

// Health returns a live webhook's health, or ENOTFOUND.
func (s *Store) Health(ctx context.Context, accountID int64, subscriptionID string) (Health, error) {
	st, err := s.q.WebhookState(ctx, dbq.WebhookStateParams{SubscriptionID: subscriptionID, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Health{}, webhooks.Errorf(webhooks.ENOTFOUND, "Webhook %s not found.", subscriptionID)
	}
	if err != nil {
		return Health{}, fmt.Errorf("health of %s: %w", subscriptionID, err)
	}
	h := Health{Active: st.Active, FailedInARow: int(st.FailedDeliveriesInARow), FailingSince: st.FailingSince,
		DisabledAt: st.DisabledAt, DisabledReason: st.DisabledReason, StateChange: st.NotifyStateChange,
		Deliveries: map[string]Counts{}, Attempts: map[string]Counts{}}
	if h.StateChange {
		if h.FailingJobs, h.FailingJobsTotal, err = s.FailingJobs(ctx, accountID, subscriptionID); err != nil {
			return Health{}, err
		}
	}
	for _, status := range Statuses {
		h.Deliveries[status] = Counts{}
	}
	rows, err := s.q.WebhookDeliveryCounts(ctx, dbq.WebhookDeliveryCountsParams{SubscriptionID: subscriptionID, AccountID: accountID})
	if err != nil {
		return Health{}, fmt.Errorf("delivery counts of %s: %w", subscriptionID, err)
	}
	for _, r := range rows {
		h.Deliveries[r.Status] = Counts{Last24h: r.Last24h, Last7d: r.Last7d}
		var last *time.Time
		if r.LastCompletedAt.After(time.Unix(0, 0)) {
			last = &r.LastCompletedAt
		}
		switch r.Status {
		case StatusSucceeded:
			h.LastSuccessAt = last
		case StatusFailed:
			h.LastFailureAt = last
		}
	}
	attempts, err := s.q.WebhookAttemptCounts(ctx, dbq.WebhookAttemptCountsParams{SubscriptionID: subscriptionID, AccountID: accountID})
	if err != nil {
		return Health{}, fmt.Errorf("attempt counts of %s: %w", subscriptionID, err)
	}
	for _, r := range attempts {
		kind := r.ErrorKind
		if kind == "" {
			kind = "success"
		}
		h.Attempts[kind] = Counts{Last24h: r.Last24h, Last7d: r.Last7d}
	}
	times, err := s.q.RecentAttemptTimes(ctx, dbq.RecentAttemptTimesParams{SubscriptionID: subscriptionID, AccountID: accountID})
	if err != nil {
		return Health{}, fmt.Errorf("attempt times of %s: %w", subscriptionID, err)
	}
	h.AttemptP50 = time.Duration(times.P50Ms * float64(time.Millisecond))
	h.AttemptP95 = time.Duration(times.P95Ms * float64(time.Millisecond))
	return h, nil
}

// WebhookFlags says which of an account's webhooks were disabled
// automatically, and which are failing (their last deliveries failed).
func (s *Store) WebhookFlags(ctx context.Context, accountID int64) (disabled, failing map[string]bool, err error) {
	rows, err := s.q.AccountWebhookStates(ctx, accountID)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook states of account %d: %w", accountID, err)
	}
	disabled, failing = map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		disabled[r.ID] = r.Disabled
		failing[r.ID] = r.FailedDeliveriesInARow > 0
	}
	return disabled, failing, nil
}

// Hour is one hour of a webhook's deliveries by final outcome and the 95th
// percentile of its attempts' durations.
type Hour struct {
	Start                                  time.Time
	Succeeded, Failed, InProgress, NotSent int64
	AttemptP95                             time.Duration
}

// Hourly returns the webhook's last 7 days hour by hour (hours without
// deliveries are absent).
func (s *Store) Hourly(ctx context.Context, accountID int64, subscriptionID string) ([]Hour, error) {
	rows, err := s.q.WebhookHourly(ctx, dbq.WebhookHourlyParams{SubscriptionID: subscriptionID, AccountID: accountID})
	if err != nil {
		return nil, fmt.Errorf("hourly deliveries of %s: %w", subscriptionID, err)
	}
	out := make([]Hour, len(rows))
	for i, r := range rows {
		out[i] = Hour{Start: r.Hour, Succeeded: r.Succeeded, Failed: r.Failed, InProgress: r.InProgress, NotSent: r.NotSent,
			AttemptP95: time.Duration(r.P95Ms * float64(time.Millisecond))}
	}
	return out, nil
}
