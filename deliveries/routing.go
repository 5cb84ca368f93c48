package deliveries

import (
	"context"
	"fmt"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// StaleRoutingError is IngestEvents' answer when some events were judged
// with routing older than their account's (RoutingVersion): nothing was
// stored. Read the accounts' routing again (WebhookRouting), judge the
// events again and retry.
type StaleRoutingError struct {
	Accounts []int64
}

func (e *StaleRoutingError) Error() string {
	return fmt.Sprintf("the routing of %d accounts changed since it was read", len(e.Accounts))
}

// staleAccounts is the statement's kind 'stale' rows as an error, or nil.
func staleAccounts(rows []dbq.IngestEventsRow) *StaleRoutingError {
	var stale *StaleRoutingError
	for _, r := range rows {
		if r.Kind == "stale" {
			if stale == nil {
				stale = &StaleRoutingError{}
			}
			stale.Accounts = append(stale.Accounts, r.AccountID)
		}
	}
	return stale
}

// AccountRouting is what routes an account's events, as of Version of its
// routing: whether any of its live webhooks follows states, and its live
// webhooks with a filter.
type AccountRouting struct {
	AccountID    int64
	Version      int64
	FollowsState bool
	Filters      []FilteredWebhook
}

// Routed reports whether the account's events need the ingestion
// statement's routing steps.
func (a AccountRouting) Routed() bool {
	return a.FollowsState || len(a.Filters) > 0
}

// FilteredWebhook is a webhook with a filter and what matching an event
// to it needs.
type FilteredWebhook struct {
	ID         string
	Name       string
	EventTypes []string
	JobIDs     []int64 // none: every job
	Filter     string
}

// WebhookRouting returns the routing of these accounts, one entry per
// account in order.
func (s *Store) WebhookRouting(ctx context.Context, accountIDs []int64) ([]AccountRouting, error) {
	rows, err := s.q.WebhookRouting(ctx, accountIDs)
	if err != nil {
		return nil, fmt.Errorf("routing of %d accounts: %w", len(accountIDs), err)
	}
	var out []AccountRouting
	at := map[int64]int{}
	for _, r := range rows {
		i, ok := at[r.AccountID]
		if !ok {
			i = len(out)
			at[r.AccountID] = i
			out = append(out, AccountRouting{AccountID: r.AccountID, Version: r.Version, FollowsState: r.FollowsState})
		}
		if r.Filter == nil {
			continue
		}
		out[i].Filters = append(out[i].Filters, FilteredWebhook{ID: r.SubscriptionID, Name: r.Name,
			EventTypes: r.EventTypes, JobIDs: r.JobIds, Filter: *r.Filter})
	}
	return out, nil
}
