package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/formats"
)

// FeedWebhook is a live webhook whose feed is read, with its current
// secret as sealed and its format.
type FeedWebhook struct {
	ID               string
	AccountID        int64
	Name             string
	SecretKeyID      string
	SecretCiphertext []byte
	Format           string
}

// FeedEntry is one of a webhook's numbered deliveries.
type FeedEntry struct {
	Sequence  int64
	ID        string
	EventID   string
	EventType string
	Status    string
	CreatedAt time.Time
	// Body is the exact body its attempts send (a PagerDuty body with its
	// routing key masked); nil only when it was never attempted and its
	// event is no longer stored, so it cannot be built, or its webhook's
	// format sends nothing for it.
	Body []byte
}

// FeedWebhook loads the account's live webhook for its feed.
func (s *Store) FeedWebhook(ctx context.Context, accountID int64, id string) (FeedWebhook, error) {
	r, err := s.q.FeedWebhook(ctx, dbq.FeedWebhookParams{SubscriptionID: id, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return FeedWebhook{}, webhooks.Errorf(webhooks.ENOTFOUND, "Webhook %s not found.", id)
	}
	if err != nil {
		return FeedWebhook{}, fmt.Errorf("load webhook %s: %w", id, err)
	}
	return FeedWebhook{ID: r.ID, AccountID: accountID, Name: r.Name, SecretKeyID: r.SecretKeyID, SecretCiphertext: r.SecretCiphertext,
		Format: r.Format}, nil
}

// FeedPage lists at most limit of the webhook's numbered deliveries after
// number after, in order. A delivery whose body is not fixed yet (not
// attempted) gets it fixed here, built as its first attempt builds it
// (BuildBody, the webhook's name and format now): the feed and every attempt then
// show the same bytes, whatever changes before the attempt.
func (s *Store) FeedPage(ctx context.Context, w FeedWebhook, after int64, limit int) ([]FeedEntry, error) {
	rows, err := s.q.FeedPage(ctx, dbq.FeedPageParams{SubscriptionID: w.ID, AccountID: w.AccountID, After: after, RowLimit: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("read the feed of %s after %d: %w", w.ID, after, err)
	}
	out := make([]FeedEntry, len(rows))
	events := make(map[string]EventBody, len(rows))
	var fix dbq.FixFeedBodiesParams
	for i, r := range rows {
		out[i] = FeedEntry{Sequence: r.Sequence, ID: r.ID, EventID: r.EventID, EventType: r.EventType, Status: r.Status,
			CreatedAt: r.CreatedAt}
		event := EventBody{AccountID: w.AccountID, SubscriptionID: w.ID, WebhookName: w.Name,
			EventID: r.EventID, EventType: r.EventType, EventData: r.EventData, ToolName: r.EventToolName, AcceptedAt: r.EventAcceptedAt,
			Format: w.Format, Links: s.links}
		events[r.ID] = event
		if fixed := (FixedBody{Payload: r.Payload, Name: r.BodyName}); !fixed.IsZero() || r.EventData == nil {
			if out[i].Body, err = fixed.Bytes(event); err != nil {
				return nil, fmt.Errorf("build the body of %s: %w", r.ID, err)
			}
			continue
		}
		body, err := BuildBody(event)
		if errors.Is(err, formats.ErrNothingToSend) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("build the body of %s: %w", r.ID, err)
		}
		out[i].Body = body
		fixed := FixBody(w.Format, w.Name, body)
		fix.Ids, fix.Payloads, fix.BodyNames = append(fix.Ids, r.ID), append(fix.Payloads, fixed.Payload), append(fix.BodyNames, fixed.Name)
	}
	if len(fix.Ids) > 0 {
		return s.fixFeedBodies(ctx, fix, out, events)
	}
	return out, nil
}

// fixFeedBodies fixes the bodies the feed built and returns the page as
// it may be shown. An attempt that fixed one first (between the read and
// this write) wins: its body is what was sent, so the entry shows that
// one (built from its event, events by delivery id, when it is kept by
// name).
func (s *Store) fixFeedBodies(ctx context.Context, fix dbq.FixFeedBodiesParams, out []FeedEntry, events map[string]EventBody) ([]FeedEntry, error) {
	stored, err := s.q.FixFeedBodies(ctx, fix)
	if err != nil {
		return nil, fmt.Errorf("fix %d bodies: %w", len(fix.Ids), err)
	}
	inFlight := map[string]bool{}
	byID := make(map[string][]byte, len(stored))
	for _, r := range stored {
		fixed := FixedBody{Payload: r.Payload, Name: r.BodyName}
		if fixed.IsZero() {
			inFlight[r.ID] = true
			continue
		}
		if byID[r.ID], err = fixed.Bytes(events[r.ID]); err != nil {
			return nil, fmt.Errorf("build the body of %s: %w", r.ID, err)
		}
	}
	// The page stops before the first delivery whose first attempt is in
	// flight with its body not fixed yet: the feed shows only the bytes
	// that are sent, and these are known once the attempt is recorded.
	for i := range out {
		if inFlight[out[i].ID] {
			out = out[:i]
			break
		}
	}
	for i := range out {
		if b, ok := byID[out[i].ID]; ok {
			out[i].Body = b
		}
	}
	return out, nil
}
