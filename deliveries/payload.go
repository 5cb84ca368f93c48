package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
)

// EventBody is what a delivery's body is built from: its webhook and its
// stored event.
type EventBody struct {
	AccountID      int64
	SubscriptionID string
	WebhookName    string
	EventID        string
	EventType      string
	// EventData is the run data as stored JSON; nil when the event is gone.
	EventData  []byte
	ToolName   string
	AcceptedAt time.Time
}

// BuildBody builds a delivery's body (spec 2.2); the event's acceptance
// time is the payload's timestamp, so building it again gives the same
// bytes.
func BuildBody(b EventBody) ([]byte, error) {
	if b.EventData == nil {
		return nil, errors.New("the event of this delivery is no longer stored")
	}
	var data webhooks.RunData
	if err := json.Unmarshal(b.EventData, &data); err != nil {
		return nil, fmt.Errorf("stored event data: %w", err)
	}
	return webhooks.BuildPayload(webhooks.PayloadEnvelope{
		AccountID: b.AccountID, SubscriptionID: b.SubscriptionID, EventID: b.EventID,
		Timestamp: b.AcceptedAt.UTC(), EventType: b.EventType, WebhookName: b.WebhookName,
		Data: data, ToolName: b.ToolName,
	}), nil
}

// FixBodies builds and stores the bodies of deliveries that have none (the
// skipped deliveries of an ingestion: their bodies are recorded as they
// would have been sent).
func (s *Store) FixBodies(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.q.DeliveriesToBuild(ctx, ids)
	if err != nil {
		return fmt.Errorf("load %d deliveries to build: %w", len(ids), err)
	}
	p := dbq.SetPayloadsParams{Ids: make([]string, 0, len(rows)), Payloads: make([][]byte, 0, len(rows))}
	for _, r := range rows {
		body, err := BuildBody(EventBody{AccountID: r.AccountID, SubscriptionID: r.SubscriptionID, WebhookName: r.Name,
			EventID: r.EventID, EventType: r.EventType, EventData: r.EventData, ToolName: r.EventToolName, AcceptedAt: r.EventAcceptedAt})
		if err != nil {
			return fmt.Errorf("build the body of %s: %w", r.ID, err)
		}
		p.Ids, p.Payloads = append(p.Ids, r.ID), append(p.Payloads, body)
	}
	if err := s.q.SetPayloads(ctx, p); err != nil {
		return fmt.Errorf("store %d bodies: %w", len(p.Ids), err)
	}
	return nil
}
