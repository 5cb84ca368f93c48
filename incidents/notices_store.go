package incidents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// Notice is a message to an account about one of its webhooks.
type Notice struct {
	ID             string
	AccountID      int64
	SubscriptionID string
	WebhookName    string
	Kind           string
	// IncidentStartedAt: the notices of one incident share it.
	IncidentStartedAt time.Time
	Payload           []byte
	Status            string // pending, delivered, failed or no_endpoint
	AttemptCount      int
	LastStatusCode    int
	LastError         string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// CreateNotice stores a notice, once per webhook, kind and incident: false
// when one was stored already.
func (s *Store) CreateNotice(ctx context.Context, n Notice) (bool, error) {
	_, err := s.q.CreateNotice(ctx, dbq.CreateNoticeParams{ID: n.ID, AccountID: n.AccountID, SubscriptionID: n.SubscriptionID,
		Kind: n.Kind, IncidentStartedAt: n.IncidentStartedAt, Payload: n.Payload})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store a notice for %s: %w", n.SubscriptionID, err)
	}
	return true, nil
}

// RecentNotices counts the notices an account got since a moment.
func (s *Store) RecentNotices(ctx context.Context, accountID int64, since time.Time) (int64, error) {
	n, err := s.q.CountRecentNotices(ctx, dbq.CountRecentNoticesParams{AccountID: accountID, Since: since})
	if err != nil {
		return 0, fmt.Errorf("count the notices of account %d: %w", accountID, err)
	}
	return n, nil
}

// ErrNoNotice: no such notice.
var ErrNoNotice = errors.New("no such notice")

// Notice returns a stored notice, or ErrNoNotice.
func (s *Store) Notice(ctx context.Context, id string) (Notice, error) {
	r, err := s.q.GetNotice(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Notice{}, ErrNoNotice
	}
	if err != nil {
		return Notice{}, fmt.Errorf("get notice %s: %w", id, err)
	}
	return Notice{ID: r.ID, AccountID: r.AccountID, SubscriptionID: r.SubscriptionID, Kind: r.Kind, Payload: r.Payload,
		Status: r.Status, AttemptCount: int(r.AttemptCount), CreatedAt: r.CreatedAt}, nil
}

// RecordNoticeAttempt records one attempt to send a notice.
func (s *Store) RecordNoticeAttempt(ctx context.Context, id, status string, statusCode int, lastError string) error {
	if err := s.q.RecordNoticeAttempt(ctx, dbq.RecordNoticeAttemptParams{ID: id, Status: status,
		StatusCode: int32(statusCode), LastError: lastError}); err != nil {
		return fmt.Errorf("record an attempt of notice %s: %w", id, err)
	}
	return nil
}

// Notices returns an account's latest notices, newest first.
func (s *Store) Notices(ctx context.Context, accountID int64, limit int) ([]Notice, error) {
	rows, err := s.q.ListNotices(ctx, dbq.ListNoticesParams{AccountID: accountID, RowLimit: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list the notices of account %d: %w", accountID, err)
	}
	out := make([]Notice, len(rows))
	for i, r := range rows {
		out[i] = Notice{ID: r.ID, AccountID: accountID, SubscriptionID: r.SubscriptionID, WebhookName: r.WebhookName,
			Kind: r.Kind, IncidentStartedAt: r.IncidentStartedAt, Status: r.Status, AttemptCount: int(r.AttemptCount),
			LastStatusCode: int(r.LastStatusCode), LastError: r.LastError, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}
