package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/formats"
)

// EventBody is what a delivery's body is built from: its webhook (its name
// and format) and its stored event.
type EventBody struct {
	AccountID      int64
	SubscriptionID string
	WebhookName    string
	EventID        string
	EventType      string
	// EventData is the run data as kept (eventdata); nil when the event
	// is gone.
	EventData  []byte
	ToolName   string
	AcceptedAt time.Time
	// Format is the webhook's format (its delivery settings); "" is the
	// spec's body.
	Format string
	// Links makes the link to the run that Slack, Teams and PagerDuty
	// bodies show (no template: none).
	Links formats.RunLinks
}

// BuildBody builds a delivery's body in its webhook's format (the spec's
// body, 2.2, by default); the event's acceptance time is the payload's
// timestamp, so building it again gives the same bytes. A PagerDuty body
// holds formats.RoutingKeyMask: the key goes only into the bytes sent
// (formats.WithRoutingKey). formats.ErrNothingToSend when the format sends
// nothing for the event.
func BuildBody(b EventBody) ([]byte, error) {
	if b.EventData == nil {
		return nil, errors.New("the event of this delivery is no longer stored")
	}
	f, err := formats.Parse(b.Format)
	if err != nil {
		return nil, err
	}
	data, err := eventdata.Unmarshal(b.EventData)
	if err != nil {
		return nil, fmt.Errorf("stored event %s: %w", b.EventID, err)
	}
	e := webhooks.PayloadEnvelope{
		AccountID: b.AccountID, SubscriptionID: b.SubscriptionID, EventID: b.EventID,
		Timestamp: b.AcceptedAt.UTC(), EventType: b.EventType, WebhookName: b.WebhookName,
		Data: data, ToolName: b.ToolName,
	}
	return formats.Build(f, formats.Input{Envelope: e, RunURL: b.Links.URL(e)})
}

// FixedBody is a delivery's body as it is kept once fixed (migration
// 00031): the webhook's name a body in the spec's format was built with,
// to be built again from the stored event (BuildBody gives the same bytes
// every time), or the bytes of a body in another format (those are built
// with the deployment's run links too). Zero: not fixed yet; its first
// attempt fixes it with the webhook as it is then.
type FixedBody struct {
	Payload []byte
	Name    string
}

// FixBody is how a body built in format for a webhook named name is kept.
func FixBody(format, name string, body []byte) FixedBody {
	if f, err := formats.Parse(format); err == nil && f == formats.Standard {
		return FixedBody{Name: name}
	}
	return FixedBody{Payload: body}
}

// IsZero says the body is not fixed yet.
func (b FixedBody) IsZero() bool { return b.Payload == nil && b.Name == "" }

// Bytes is the fixed body: its bytes, or the spec's body built from e
// (its event) with the name it was fixed with. nil when not fixed.
func (b FixedBody) Bytes(e EventBody) ([]byte, error) {
	if b.Payload != nil || b.Name == "" {
		return b.Payload, nil
	}
	e.WebhookName, e.Format = b.Name, string(formats.Standard)
	return BuildBody(e)
}

// TestBody is a test delivery's body in its webhook's format, built from
// its sample event as a delivery's is (spec 4.5), and the sample's event
// type ("" for the spec's body).
// A PagerDuty webhook is sent nothing for job.run.started: its sample
// becomes the run's failure (a trigger), so a test shows an incident.
func TestBody(e webhooks.PayloadEnvelope, format string, links formats.RunLinks) (string, []byte, error) {
	f, err := formats.Parse(format)
	if err != nil {
		return "", nil, err
	}
	if f == formats.Standard {
		return "", webhooks.BuildPayload(e), nil
	}
	if f == formats.PagerDuty && e.EventType == webhooks.EventRunStarted {
		e.EventType = webhooks.EventRunErrored
		e.Data.RunStatus, e.Data.RunStatusCode = webhooks.DefaultRunStatus(e.EventType)
		e.Data.RunStatusMessage = e.Data.RunStatus
		e.Data.RunErroredAt = e.Timestamp.UTC().Format(webhooks.RunTimeFormat)
	}
	body, err := formats.Build(f, formats.Input{Envelope: e, RunURL: links.URL(e)})
	return e.EventType, body, err
}

// FixBodies fixes the bodies of deliveries that have none (the skipped
// deliveries of an ingestion: their bodies are recorded as they would have
// been sent, in their webhook's format; FixBody). One whose format sends
// nothing for its event keeps none.
func (s *Store) FixBodies(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.q.DeliveriesToBuild(ctx, ids)
	if err != nil {
		return fmt.Errorf("load %d deliveries to build: %w", len(ids), err)
	}
	p := dbq.SetPayloadsParams{Ids: make([]string, 0, len(rows)), Payloads: make([][]byte, 0, len(rows)),
		BodyNames: make([]string, 0, len(rows))}
	for _, r := range rows {
		body, err := BuildBody(EventBody{AccountID: r.AccountID, SubscriptionID: r.SubscriptionID, WebhookName: r.Name,
			EventID: r.EventID, EventType: r.EventType, EventData: r.EventData, ToolName: r.EventToolName, AcceptedAt: r.EventAcceptedAt,
			Format: r.Format, Links: s.links})
		if errors.Is(err, formats.ErrNothingToSend) {
			continue
		}
		if err != nil {
			return fmt.Errorf("build the body of %s: %w", r.ID, err)
		}
		fixed := FixBody(r.Format, r.Name, body)
		p.Ids, p.Payloads, p.BodyNames = append(p.Ids, r.ID), append(p.Payloads, fixed.Payload), append(p.BodyNames, fixed.Name)
	}
	if err := s.q.SetPayloads(ctx, p); err != nil {
		return fmt.Errorf("store %d bodies: %w", len(p.Ids), err)
	}
	return nil
}
