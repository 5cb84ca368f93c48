package incidents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// Store reads and writes webhooks' incidents, the notices accounts get
// about them and the accounts' notification endpoints.
type Store struct {
	q *dbq.Queries
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{q: dbq.New(pool)} }

// ErrNoIncidentEnded: there is no incident to announce or end (none goes
// on, it was announced already, or it is not over).
var ErrNoIncidentEnded = errors.New("no incident to announce or end")

// Incident is a webhook's incident: from a breaker that opened (or a
// deactivation) until the breaker stayed closed for the quiet period.
type Incident struct {
	SubscriptionID string
	AccountID      int64
	StartedAt      time.Time
	WebhookName    string
	ClientURL      string
}

// AnnounceIncident marks a webhook's incident announced, once; it returns
// ErrNoIncidentEnded when there is none or it was announced already.
func (s *Store) AnnounceIncident(ctx context.Context, subscriptionID string) (Incident, error) {
	r, err := s.q.AnnounceIncident(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Incident{}, ErrNoIncidentEnded
	}
	if err != nil {
		return Incident{}, fmt.Errorf("announce the incident of %s: %w", subscriptionID, err)
	}
	return Incident{SubscriptionID: r.ID, AccountID: r.AccountID, StartedAt: r.IncidentStartedAt,
		WebhookName: r.Name, ClientURL: r.ClientUrl}, nil
}

// IncidentsDue lists at most limit webhooks whose incident is due a step:
// announced noticeAfter after it started, or ended once the breaker stayed
// closed for quiet (the sweeper's follow-up).
func (s *Store) IncidentsDue(ctx context.Context, noticeAfter, quiet time.Duration, limit int) ([]string, error) {
	ids, err := s.q.IncidentsDue(ctx, dbq.IncidentsDueParams{
		NoticeAfterMs: noticeAfter.Milliseconds(), QuietMs: quiet.Milliseconds(), MaxWebhooks: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list incidents due a step: %w", err)
	}
	return ids, nil
}

// Incident returns a webhook's incident going on, or ErrNoIncidentEnded.
func (s *Store) Incident(ctx context.Context, subscriptionID string) (Incident, error) {
	r, err := s.q.IncidentOf(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Incident{}, ErrNoIncidentEnded
	}
	if err != nil {
		return Incident{}, fmt.Errorf("incident of %s: %w", subscriptionID, err)
	}
	return Incident{SubscriptionID: r.ID, AccountID: r.AccountID, StartedAt: r.IncidentStartedAt,
		WebhookName: r.Name, ClientURL: r.ClientUrl}, nil
}

// EndedIncident is an incident that ended, and whether it was announced.
type EndedIncident struct {
	Incident  Incident
	Announced bool
}

// EndIncident ends a webhook's incident when its breaker stayed closed for
// quiet, or it was deactivated; ErrNoIncidentEnded otherwise.
func (s *Store) EndIncident(ctx context.Context, subscriptionID string, quiet time.Duration) (EndedIncident, error) {
	r, err := s.q.EndIncident(ctx, dbq.EndIncidentParams{ID: subscriptionID, QuietMs: quiet.Milliseconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return EndedIncident{}, ErrNoIncidentEnded
	}
	if err != nil {
		return EndedIncident{}, fmt.Errorf("end the incident of %s: %w", subscriptionID, err)
	}
	return EndedIncident{Announced: r.Announced, Incident: Incident{SubscriptionID: r.ID, AccountID: r.AccountID,
		StartedAt: r.IncidentStartedAt, WebhookName: r.Name, ClientURL: r.ClientUrl}}, nil
}
