package eventfilter

import (
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	webhooks "github.com/jobhooks/jobhooks"
)

type fieldKind int

const (
	stringField fieldKind = iota
	intField
)

// field is one variable of the environment, at its index in Event.vals.
type field struct {
	name string
	kind fieldKind
}

// Indexes of the fields in fields and Event.vals.
const (
	fEventType = iota
	fAccountID
	fWebhooksID
	fEventID
	fTimestamp
	fWebhookName
	fJobID
	fJobName
	fRunID
	fEnvironmentID
	fEnvironmentName
	fToolVersion
	fProjectName
	fProjectID
	fRunStatus
	fRunStatusCode
	fRunStatusMessage
	fRunReason
	fRunStartedAt
	fRunFinishedAt
	fRunErroredAt
	nFields
)

// fields are the event's members filters read, named as in the spec's body
// (section 2.2). The tool's version is data.toolVersion, the spec's neutral
// name, whatever the tool's own name in the body (dbtVersion, ...).
var fields = [nFields]field{
	fEventType: {"eventType", stringField}, fAccountID: {"accountId", intField},
	fWebhooksID: {"webhooksID", stringField}, fEventID: {"eventId", stringField},
	fTimestamp: {"timestamp", stringField}, fWebhookName: {"webhookName", stringField},
	fJobID: {"data.jobId", stringField}, fJobName: {"data.jobName", stringField},
	fRunID: {"data.runId", stringField}, fEnvironmentID: {"data.environmentId", stringField},
	fEnvironmentName: {"data.environmentName", stringField}, fToolVersion: {"data.toolVersion", stringField},
	fProjectName: {"data.projectName", stringField}, fProjectID: {"data.projectId", stringField},
	fRunStatus: {"data.runStatus", stringField}, fRunStatusCode: {"data.runStatusCode", intField},
	fRunStatusMessage: {"data.runStatusMessage", stringField}, fRunReason: {"data.runReason", stringField},
	fRunStartedAt: {"data.runStartedAt", stringField}, fRunFinishedAt: {"data.runFinishedAt", stringField},
	fRunErroredAt: {"data.runErroredAt", stringField},
}

// index finds a field by name without a map lookup's hashing.
func index(name string) int {
	for i := range fields {
		if fields[i].name == name {
			return i
		}
	}
	return -1
}

// Event is one event as filters see it, built once and matched against
// every webhook's filter: its values are converted once, so a match
// allocates only its activation.
type Event struct {
	vals [nFields]ref.Val
	// bounded: every string is at most maxFieldChars bytes, as Compile's
	// cost estimate assumed.
	bounded bool
}

// NewEvent returns e as filters see it; timestamp is the body's timestamp
// (the event's acceptance). A string absent from the body (runFinishedAt
// of a started run, ...) is "".
func NewEvent(e webhooks.Event, timestamp time.Time) *Event {
	d := e.Data
	ev := &Event{}
	for i, s := range [nFields]string{
		fEventType: e.Type, fEventID: e.ID, fTimestamp: timestamp.UTC().Format(webhooks.PayloadTimeFormat),
		fJobID: d.JobID, fJobName: d.JobName, fRunID: d.RunID, fEnvironmentID: d.EnvironmentID,
		fEnvironmentName: d.EnvironmentName, fToolVersion: d.ToolVersion, fProjectName: d.ProjectName,
		fProjectID: d.ProjectID, fRunStatus: d.RunStatus, fRunStatusMessage: d.RunStatusMessage,
		fRunReason: d.RunReason, fRunStartedAt: d.RunStartedAt,
	} {
		ev.vals[i] = types.String(s)
	}
	// As in the body: each run time only on its own event type.
	if e.Type == webhooks.EventRunCompleted {
		ev.vals[fRunFinishedAt] = types.String(d.RunFinishedAt)
	}
	if e.Type == webhooks.EventRunErrored {
		ev.vals[fRunErroredAt] = types.String(d.RunErroredAt)
	}
	ev.vals[fAccountID] = types.Int(e.AccountID)
	ev.vals[fRunStatusCode] = types.Int(d.RunStatusCode)
	ev.bounded = true
	for _, v := range ev.vals {
		if s, ok := v.(types.String); ok && len(s) > maxFieldChars {
			ev.bounded = false
		}
	}
	return ev
}

// activation resolves the event's fields for one webhook.
type activation struct {
	ev                     *Event
	webhookID, webhookName string
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch i := index(name); i {
	case -1:
		return nil, false
	case fWebhooksID:
		return types.String(a.webhookID), true
	case fWebhookName:
		return types.String(a.webhookName), true
	default:
		return a.ev.vals[i], true
	}
}

func (a *activation) Parent() interpreter.Activation { return nil }

// MatchPayload is Match for one delivery's envelope: for a single webhook,
// where building the Event each time costs nothing worth sharing.
func (f *Filter) MatchPayload(p webhooks.PayloadEnvelope) (bool, error) {
	ev := NewEvent(webhooks.Event{ID: p.EventID, AccountID: p.AccountID, Type: p.EventType, Data: p.Data}, p.Timestamp)
	return f.Match(ev, p.SubscriptionID, p.WebhookName)
}
