package deliveries

import (
	"context"
	"fmt"
)

// AccountOpenBreakers says which of an account's live webhooks have their
// breaker open (the web UI's webhook list marks them).
func (s *Store) AccountOpenBreakers(ctx context.Context, accountID int64) (map[string]bool, error) {
	ids, err := s.q.AccountOpenBreakers(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("open breakers of account %d: %w", accountID, err)
	}
	open := make(map[string]bool, len(ids))
	for _, id := range ids {
		open[id] = true
	}
	return open, nil
}
