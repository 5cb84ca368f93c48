package deliveries

import (
	"context"
	"fmt"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// StaleFiltersError is IngestEvents' answer when some events were judged
// with filters older than their account's (FilterVersion): nothing was
// stored. Read the accounts' filters again (WebhookFilters), judge the
// events again and retry.
type StaleFiltersError struct {
	Accounts []int64
}

func (e *StaleFiltersError) Error() string {
	return fmt.Sprintf("the filters of %d accounts changed since they were read", len(e.Accounts))
}

// staleAccounts is the statement's kind 'stale' rows as an error, or nil.
func staleAccounts(rows []dbq.IngestEventsRow) *StaleFiltersError {
	var stale *StaleFiltersError
	for _, r := range rows {
		if r.Kind == "stale" {
			if stale == nil {
				stale = &StaleFiltersError{}
			}
			stale.Accounts = append(stale.Accounts, r.AccountID)
		}
	}
	return stale
}

// AccountFilters are an account's live webhooks with a filter, as of
// Version of its filters.
type AccountFilters struct {
	AccountID int64
	Version   int64
	Webhooks  []FilteredWebhook
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

// WebhookFilters returns the filters of these accounts, one entry per
// account in order.
func (s *Store) WebhookFilters(ctx context.Context, accountIDs []int64) ([]AccountFilters, error) {
	rows, err := s.q.WebhookFilters(ctx, accountIDs)
	if err != nil {
		return nil, fmt.Errorf("filters of %d accounts: %w", len(accountIDs), err)
	}
	var out []AccountFilters
	at := map[int64]int{}
	for _, r := range rows {
		i, ok := at[r.AccountID]
		if !ok {
			i = len(out)
			at[r.AccountID] = i
			out = append(out, AccountFilters{AccountID: r.AccountID, Version: r.Version})
		}
		if r.Filter == nil {
			continue
		}
		out[i].Webhooks = append(out[i].Webhooks, FilteredWebhook{ID: r.SubscriptionID, Name: r.Name,
			EventTypes: r.EventTypes, JobIDs: r.JobIds, Filter: *r.Filter})
	}
	return out, nil
}
