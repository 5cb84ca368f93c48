package webhooksettings

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/eventfilter"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// CheckedEvents is how many of the account's latest events a filter is
// checked against.
const CheckedEvents = 20

// checkTimeout bounds reading the events: the query walks the acceptance
// index, further for an account with few recent events.
const checkTimeout = 3 * time.Second

// CheckedEvent is one of the account's latest events and what a filter
// made of it.
type CheckedEvent struct {
	EventID    string
	EventType  string
	Data       webhooks.RunData
	AcceptedAt time.Time
	// Matched: the filter is true for it. Err, when not "", says why the
	// filter could not be evaluated on it (then it is not delivered).
	Matched bool
	Err     string
}

// recentEvents returns the account's latest events and the webhook's name
// (a filter's webhookName), or subscriptions.ErrNotFound.
func (s *Store) recentEvents(ctx context.Context, accountID int64, webhookID string, n int) (string, []dbq.RecentAccountEventsRow, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	name, err := s.q.WebhookName(ctx, dbq.WebhookNameParams{ID: webhookID, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, subscriptions.ErrNotFound
	} else if err != nil {
		return "", nil, fmt.Errorf("webhook %s: %w", webhookID, err)
	}
	rows, err := s.q.RecentAccountEvents(ctx, dbq.RecentAccountEventsParams{AccountID: accountID, MaxEvents: int32(n)})
	if err != nil {
		return "", nil, fmt.Errorf("latest events of account %d: %w", accountID, err)
	}
	return name, rows, nil
}

// CheckFilter compiles expr and returns which of the account's latest
// CheckedEvents events it is true for, as webhook webhookID would see
// them, newest first; nothing is stored. A filter that does not compile
// is webhooks.Problems naming "filter", as Update would refuse it.
// Reading needs what reading the webhook needs.
func (s *Service) CheckFilter(ctx context.Context, a subscriptions.Access, webhookID, expr string) ([]CheckedEvent, error) {
	if a.Account().ID == 0 {
		return nil, errNoAccess
	}
	if err := subscriptions.CheckID(webhookID); err != nil {
		return nil, err
	}
	f, err := eventfilter.Compile(expr)
	if err != nil {
		return nil, webhooks.Problems{filterProblem(err)}
	}
	name, rows, err := s.store.recentEvents(ctx, a.Account().ID, webhookID, CheckedEvents)
	if err != nil {
		return nil, err
	}
	out := make([]CheckedEvent, 0, len(rows))
	for _, r := range rows {
		ce := CheckedEvent{EventID: r.ID, EventType: r.EventType, AcceptedAt: r.AcceptedAt}
		var err error
		if ce.Data, err = eventdata.Unmarshal(r.Data); err != nil {
			return nil, fmt.Errorf("stored event %s: %w", r.ID, err)
		}
		ev := eventfilter.NewEvent(webhooks.Event{ID: r.ID, AccountID: a.Account().ID, Type: r.EventType, Data: ce.Data}, r.AcceptedAt)
		if ce.Matched, err = f.Match(ev, webhookID, name); err != nil {
			ce.Err = err.Error()
		}
		out = append(out, ce)
	}
	return out, nil
}
