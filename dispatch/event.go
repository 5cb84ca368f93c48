package dispatch

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

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
	// Invalid UTF-8 would map distinct ids to one event once repaired.
	if !webhooks.StorableText(callerEventID) {
		return webhooks.Event{}, webhooks.FieldErrorf("eventId", "eventId must be valid UTF-8 text without NUL characters.")
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

// EventIDFor maps a caller's event id to a wev_ id: the same caller id for
// the same account always gives the same event, hence one delivery.
func EventIDFor(accountID int64, callerEventID string) string {
	sum := sha256.Sum256([]byte(strconv.FormatInt(accountID, 10) + "/" + callerEventID))
	return webhooks.EventIDPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:26]
}
