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
