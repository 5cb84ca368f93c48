package deliveries

import (
	"github.com/jobhooks/jobhooks"
)

// NewEvent validates an ingested event and gives it its id: derived from
// the caller's event id when there is one (so a retried ingestion is the same
// event), random otherwise. Missing run status and code default to the
// event type's (spec 3).
func NewEvent(accountID int64, eventType, callerEventID string, data webhooks.RunData) (webhooks.Event, error) {
	if accountID <= 0 {
		return webhooks.Event{}, webhooks.FieldErrorf("accountId", "accountId must be a positive integer.")
	}
	if len(callerEventID) > 200 {
		return webhooks.Event{}, webhooks.FieldErrorf("eventId", "eventId must be at most 200 characters.")
	}
	if data.RunStatus == "" && data.RunStatusCode == 0 {
		data.RunStatus, data.RunStatusCode = webhooks.DefaultRunStatus(eventType)
	}
	if err := webhooks.ValidateEvent(eventType, data); err != nil {
		return webhooks.Event{}, err
	}
	id := webhooks.NewID(webhooks.EventIDPrefix)
	if callerEventID != "" {
		id = EventIDFor(accountID, callerEventID)
	}
	return webhooks.Event{ID: id, AccountID: accountID, Type: eventType, Data: data}, nil
}
