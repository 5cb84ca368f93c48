// Package feed lists a webhook's numbered deliveries with their exact
// bodies, signed as deliveries are, so a receiver fetches what it missed.
package feed

import (
	"context"
	"fmt"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/secrets"
)

// MaxLimit bounds a page of the feed.
const MaxLimit = 500

// Entry is one numbered delivery: its exact body and the Authorization a
// delivery of that body carries with the webhook's current secret.
type Entry struct {
	deliveries.FeedEntry
	// Authorization is webhooks.Sign of Body; "" when Body is nil.
	Authorization string
}

// Page is a page of the feed; NextAfter is what the next page asks after.
type Page struct {
	Entries   []Entry
	NextAfter int64
}

// Service reads feeds.
type Service struct {
	store *deliveries.Store
	box   *secrets.Box
}

// NewService returns the feed service; box opens the webhooks' secrets.
func NewService(store *deliveries.Store, box *secrets.Box) *Service {
	return &Service{store: store, box: box}
}

// Read lists at most limit (1 to MaxLimit) of the account's webhook's
// numbered deliveries after number after (0 or more), in order.
func (s *Service) Read(ctx context.Context, accountID int64, webhookID string, after int64, limit int) (Page, error) {
	if after < 0 {
		return Page{}, webhooks.FieldErrorf("after", "after must be an integer of 0 or more, got %d.", after)
	}
	if limit < 1 || limit > MaxLimit {
		return Page{}, webhooks.FieldErrorf("limit", "limit must be an integer from 1 to %d, got %d.", MaxLimit, limit)
	}
	w, err := s.store.FeedWebhook(ctx, accountID, webhookID)
	if err != nil {
		return Page{}, err
	}
	secret, err := s.box.Open(w.SecretKeyID, w.SecretCiphertext, w.ID)
	if err != nil {
		return Page{}, fmt.Errorf("open the secret of %s: %w", w.ID, err)
	}
	entries, err := s.store.FeedPage(ctx, w, after, limit)
	if err != nil {
		return Page{}, err
	}
	page := Page{Entries: make([]Entry, len(entries)), NextAfter: after}
	for i, e := range entries {
		page.Entries[i] = Entry{FeedEntry: e}
		if e.Body != nil {
			page.Entries[i].Authorization = webhooks.Sign(secret, e.Body)
		}
		page.NextAfter = e.Sequence
	}
	return page, nil
}
