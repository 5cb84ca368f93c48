package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
)

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

// NotificationEndpoint is where an account hears of its webhooks'
// incidents; its secret signs each notice.
type NotificationEndpoint struct {
	AccountID        int64
	URL              string
	SecretKeyID      string
	SecretCiphertext []byte
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// ErrNoNotificationEndpoint: the account has none.
var ErrNoNotificationEndpoint = errors.New("no notification endpoint")

// NotificationEndpoint returns the account's endpoint, or
// ErrNoNotificationEndpoint.
func (s *Store) NotificationEndpoint(ctx context.Context, accountID int64) (NotificationEndpoint, error) {
	r, err := s.q.GetNotificationEndpoint(ctx, accountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return NotificationEndpoint{}, ErrNoNotificationEndpoint
	}
	if err != nil {
		return NotificationEndpoint{}, fmt.Errorf("notification endpoint of account %d: %w", accountID, err)
	}
	return NotificationEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// PutNotificationEndpoint sets the account's endpoint; keepSecret keeps the
// sealed secret it has (e.SecretKeyID and e.SecretCiphertext are then
// ignored). It says whether the endpoint is new.
func (s *Store) PutNotificationEndpoint(ctx context.Context, e NotificationEndpoint, keepSecret bool) (NotificationEndpoint, bool, error) {
	r, err := s.q.PutNotificationEndpoint(ctx, dbq.PutNotificationEndpointParams{AccountID: e.AccountID, Url: e.URL,
		SecretKeyID: e.SecretKeyID, SecretCiphertext: e.SecretCiphertext, KeepSecret: keepSecret})
	if err != nil {
		return NotificationEndpoint{}, false, fmt.Errorf("set the notification endpoint of account %d: %w", e.AccountID, err)
	}
	return NotificationEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, r.Created, nil
}

// RotateNotificationSecret replaces the sealed secret of the account's
// endpoint, leaving its URL as it is now, or returns
// ErrNoNotificationEndpoint: an endpoint is never made here.
func (s *Store) RotateNotificationSecret(ctx context.Context, accountID int64, secretKeyID string, secretCiphertext []byte) (NotificationEndpoint, error) {
	r, err := s.q.RotateNotificationSecret(ctx, dbq.RotateNotificationSecretParams{AccountID: accountID,
		SecretKeyID: secretKeyID, SecretCiphertext: secretCiphertext})
	if errors.Is(err, pgx.ErrNoRows) {
		return NotificationEndpoint{}, ErrNoNotificationEndpoint
	}
	if err != nil {
		return NotificationEndpoint{}, fmt.Errorf("rotate the notification secret of account %d: %w", accountID, err)
	}
	return NotificationEndpoint{AccountID: r.AccountID, URL: r.Url, SecretKeyID: r.SecretKeyID,
		SecretCiphertext: r.SecretCiphertext, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// DeleteNotificationEndpoint removes the account's endpoint; false when it
// had none.
func (s *Store) DeleteNotificationEndpoint(ctx context.Context, accountID int64) (bool, error) {
	n, err := s.q.DeleteNotificationEndpoint(ctx, accountID)
	if err != nil {
		return false, fmt.Errorf("delete the notification endpoint of account %d: %w", accountID, err)
	}
	return n > 0, nil
}

// SealedNotificationSecret is an account's notification endpoint secret as
// stored.
type SealedNotificationSecret struct {
	AccountID  int64
	KeyID      string
	Ciphertext []byte
}

// NotificationSecretsNotSealedWith lists up to limit notification endpoint
// secrets sealed with another key than keyID, of accounts after afterID.
func (s *Store) NotificationSecretsNotSealedWith(ctx context.Context, keyID string, afterID int64, limit int) ([]SealedNotificationSecret, error) {
	rows, err := s.q.NotificationSecretsNotSealedWith(ctx, dbq.NotificationSecretsNotSealedWithParams{KeyID: keyID, AfterID: afterID, BatchSize: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list notification secrets to reseal: %w", err)
	}
	out := make([]SealedNotificationSecret, len(rows))
	for i, r := range rows {
		out[i] = SealedNotificationSecret{AccountID: r.AccountID, KeyID: r.SecretKeyID, Ciphertext: r.SecretCiphertext}
	}
	return out, nil
}

// ResealNotificationSecret stores a secret sealed anew, if the row still
// holds old; false when it changed meanwhile.
func (s *Store) ResealNotificationSecret(ctx context.Context, old SealedNotificationSecret, keyID string, ciphertext []byte) (bool, error) {
	n, err := s.q.ResealNotificationSecret(ctx, dbq.ResealNotificationSecretParams{AccountID: old.AccountID, OldKeyID: old.KeyID,
		OldCiphertext: old.Ciphertext, NewKeyID: keyID, NewCiphertext: ciphertext})
	if err != nil {
		return false, fmt.Errorf("reseal the notification secret of account %d: %w", old.AccountID, err)
	}
	return n == 1, nil
}
