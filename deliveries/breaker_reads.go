package deliveries

import (
	"context"
	"fmt"
)

// OpenBreakerMark is how the web UI's webhook list marks a webhook whose
// breaker is open: its deliveries held, or on their retry schedule.
type OpenBreakerMark string

// The marks of AccountOpenBreakers.
const (
	MarkHeld     OpenBreakerMark = "held"
	MarkRetrying OpenBreakerMark = "retrying"
)

// AccountOpenBreakers says which of an account's live webhooks have their
// breaker open, and whether each holds its deliveries (the web UI's
// webhook list marks them).
func (s *Store) AccountOpenBreakers(ctx context.Context, accountID int64) (map[string]OpenBreakerMark, error) {
	rows, err := s.q.AccountOpenBreakers(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("open breakers of account %d: %w", accountID, err)
	}
	open := make(map[string]OpenBreakerMark, len(rows))
	for _, r := range rows {
		open[r.ID] = MarkRetrying
		if r.Held {
			open[r.ID] = MarkHeld
		}
	}
	return open, nil
}

// AccountBreaker is Breaker of one of an account's live webhooks: another
// account's webhook, or a deleted one, is ErrSubscriptionGone as a gone one
// is. The front ends' reads of a breaker all go through it.
func (s *Store) AccountBreaker(ctx context.Context, accountID int64, subscriptionID string) (BreakerState, error) {
	st, err := s.Breaker(ctx, subscriptionID)
	if err == nil && (st.AccountID != accountID || st.Deleted) {
		return BreakerState{}, ErrSubscriptionGone
	}
	return st, err
}
