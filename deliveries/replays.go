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

// Replay statuses.
const (
	ReplayRunning   = "running"
	ReplayCompleted = "completed"
	ReplayCancelled = "cancelled"
)

// Replay sends a webhook's failed or skipped deliveries of a time range
// again, oldest first, at a bounded rate.
type Replay struct {
	ID             string
	SubscriptionID string
	Since          time.Time
	Until          *time.Time
	Statuses       []string
	Status         string
	Total          int // counted when the replay was asked for
	Sent           int
	CreatedAt      time.Time
	FinishedAt     *time.Time
}

// CreateReplay stores a replay of the live webhook's deliveries in
// [since, until) in one of statuses, and returns its id and how many
// deliveries it will send; ENOTFOUND without such a webhook.
func (s *Store) CreateReplay(ctx context.Context, accountID int64, subscriptionID string, since time.Time, until *time.Time, statuses []string) (string, int, error) {
	row, err := s.q.CreateReplay(ctx, dbq.CreateReplayParams{
		ID: webhooks.NewID(ReplayIDPrefix), AccountID: accountID, SubscriptionID: subscriptionID,
		Since: since, Until: until, Statuses: statuses,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, webhooks.Errorf(webhooks.ENOTFOUND, "Webhook %s not found.", subscriptionID)
	}
	if err != nil {
		return "", 0, fmt.Errorf("create a replay of %s: %w", subscriptionID, err)
	}
	return row.ID, int(row.Total), nil
}

// ReplayIDPrefix starts every replay id.
const ReplayIDPrefix = "wrp_"

// Replay returns a replay of the account's webhook, or ENOTFOUND.
func (s *Store) Replay(ctx context.Context, accountID int64, subscriptionID, id string) (Replay, error) {
	r, err := s.q.GetReplay(ctx, dbq.GetReplayParams{ID: id, SubscriptionID: subscriptionID, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Replay{}, webhooks.Errorf(webhooks.ENOTFOUND, "Replay %s not found.", id)
	}
	if err != nil {
		return Replay{}, fmt.Errorf("get replay %s: %w", id, err)
	}
	return Replay{ID: r.ID, SubscriptionID: r.SubscriptionID, Since: r.Since, Until: r.Until, Statuses: r.Statuses,
		Status: r.Status, Total: int(r.Total), Sent: int(r.Sent), CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}, nil
}

// CancelReplay stops a running replay; ENOTFOUND when there is no such
// running replay.
func (s *Store) CancelReplay(ctx context.Context, accountID int64, subscriptionID, id string) error {
	_, err := s.q.CancelReplay(ctx, dbq.CancelReplayParams{ID: id, SubscriptionID: subscriptionID, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.Errorf(webhooks.ENOTFOUND, "No running replay %s.", id)
	}
	if err != nil {
		return fmt.Errorf("cancel replay %s: %w", id, err)
	}
	return nil
}

// ReplayNextBatch sends the replay's next batch of at most size deliveries
// (new deliveries due now, made on the shared route: the shard's claim
// moves them to the webhook's route when it has another) and returns how
// many, the replay's status after it and the webhook to wake (no route:
// its shard).
func (s *Store) ReplayNextBatch(ctx context.Context, id string, size int) (int, string, RoutedWebhook, error) {
	r, err := s.q.ReplayNextBatch(ctx, dbq.ReplayNextBatchParams{ReplayID: id, BatchSize: int32(size)})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ReplayCancelled, RoutedWebhook{}, nil // the replay is gone with its webhook
	}
	if err != nil {
		return 0, "", RoutedWebhook{}, fmt.Errorf("next batch of replay %s: %w", id, err)
	}
	return int(r.Sent), r.Status, RoutedWebhook{SubscriptionID: r.SubscriptionID, AccountID: r.AccountID, LaneKey: int(r.LaneKey)}, nil
}

// CountReplayable says how many deliveries a replay since since with
// statuses would send now.
func (s *Store) CountReplayable(ctx context.Context, accountID int64, subscriptionID string, since time.Time, statuses []string) (int, error) {
	n, err := s.q.CountReplayable(ctx, dbq.CountReplayableParams{SubscriptionID: subscriptionID, AccountID: accountID, Since: since, Statuses: statuses})
	if err != nil {
		return 0, fmt.Errorf("count replayable deliveries of %s: %w", subscriptionID, err)
	}
	return int(n), nil
}
