package webhooks

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Wire formats of payload timestamps (spec 2.2).
const (
	// PayloadTimeFormat is the envelope timestamp: UTC with nanoseconds.
	PayloadTimeFormat = "2006-01-02T15:04:05.000000000Z"
	// RunTimeFormat is the run timestamps: UTC, whole seconds.
	RunTimeFormat = "2006-01-02T15:04:05Z"
)

// Run statuses and codes observed on the wire (spec 3).
const (
	RunStatusRunning = "Running"
	RunStatusSuccess = "Success"
	RunStatusErrored = "Errored"
)

// RunData is the "data" object of a payload: the run an event is about.
// Timestamps are already in RunTimeFormat; empty means absent.
type RunData struct {
	JobID            string `json:"jobId"`
	JobName          string `json:"jobName"`
	RunID            string `json:"runId"`
	EnvironmentID    string `json:"environmentId"`
	EnvironmentName  string `json:"environmentName"`
	ToolVersion      string `json:"toolVersion"`
	ProjectName      string `json:"projectName"`
	ProjectID        string `json:"projectId"`
	RunStatus        string `json:"runStatus"`
	RunStatusCode    int    `json:"runStatusCode"`
	RunStatusMessage string `json:"runStatusMessage"`
	RunReason        string `json:"runReason"`
	RunStartedAt     string `json:"runStartedAt"`
	RunFinishedAt    string `json:"runFinishedAt,omitempty"`
	RunErroredAt     string `json:"runErroredAt,omitempty"`
}

// Event is one job-run event as ingested, before it is matched to
// subscriptions.
type Event struct {
	ID        string  `json:"id"` // wev_...
	AccountID int64   `json:"accountId"`
	Type      string  `json:"type"`
	Data      RunData `json:"data"`
}

// DefaultRunStatus returns the status and code an event type carries when
// the caller does not say (spec 3).
func DefaultRunStatus(eventType string) (string, int) {
	switch eventType {
	case EventRunStarted:
		return RunStatusRunning, 3
	case EventRunErrored:
		return RunStatusErrored, 20
	default:
		return RunStatusSuccess, 10
	}
}

// ValidateEvent checks an event's type and run data, naming the field at
// fault ("eventType", "data.jobId", ...).
func ValidateEvent(eventType string, d RunData) error {
	if !validEventType(eventType) {
		return FieldErrorf("eventType", "eventType must be one of job.run.started, job.run.completed, job.run.errored.")
	}
	for _, f := range []struct{ name, value string }{
		{"data.jobId", d.JobID}, {"data.jobName", d.JobName}, {"data.runId", d.RunID},
		{"data.environmentId", d.EnvironmentID}, {"data.environmentName", d.EnvironmentName},
		{"data.toolVersion", d.ToolVersion}, {"data.projectName", d.ProjectName}, {"data.projectId", d.ProjectID},
		{"data.runStatus", d.RunStatus}, {"data.runStatusMessage", d.RunStatusMessage}, {"data.runReason", d.RunReason},
		{"data.runStartedAt", d.RunStartedAt}, {"data.runFinishedAt", d.RunFinishedAt}, {"data.runErroredAt", d.RunErroredAt},
	} {
		if !StorableText(f.value) {
			return FieldErrorf(f.name, "%s must be valid UTF-8 text without NUL characters.", f.name)
		}
	}
	required := []struct{ name, value string }{
		{"data.jobId", d.JobID}, {"data.runId", d.RunID}, {"data.runStartedAt", d.RunStartedAt},
	}
	switch eventType {
	case EventRunCompleted:
		required = append(required, struct{ name, value string }{"data.runFinishedAt", d.RunFinishedAt})
	case EventRunErrored:
		required = append(required, struct{ name, value string }{"data.runErroredAt", d.RunErroredAt})
	}
	for _, r := range required {
		if r.value == "" {
			return FieldErrorf(r.name, "%s is required for %s.", r.name, eventType)
		}
	}
	for _, t := range []struct{ name, value string }{
		{"data.runStartedAt", d.RunStartedAt}, {"data.runFinishedAt", d.RunFinishedAt}, {"data.runErroredAt", d.RunErroredAt},
	} {
		if t.value == "" {
			continue
		}
		if _, err := time.Parse(RunTimeFormat, t.value); err != nil {
			return FieldErrorf(t.name, "%s must be an ISO 8601 UTC time such as 2026-01-02T15:04:05Z.", t.name)
		}
	}
	return nil
}

// StorableText reports whether PostgreSQL can store s as text (or in
// jsonb): valid UTF-8 without NUL characters. An event's strings must be;
// one that is not would fail the statement that stores its whole group.
func StorableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

func validEventType(t string) bool {
	for _, e := range EventTypes {
		if e == t {
			return true
		}
	}
	return false
}

// NormalizeRunTime parses an ISO 8601 time (RFC 3339, any offset, optional
// fraction) and returns it in RunTimeFormat; "" stays "".
func NormalizeRunTime(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return "", err
	}
	return t.UTC().Truncate(time.Second).Format(RunTimeFormat), nil
}

// PayloadEnvelope is everything a delivery's body is built from.
type PayloadEnvelope struct {
	AccountID      int64
	SubscriptionID string // wsu_...
	EventID        string // wev_...
	Timestamp      time.Time
	EventType      string
	WebhookName    string
	Data           RunData
	// ToolName is the job tool's short name; the data carries its version
	// as "<ToolName>Version" (spec 2.2), for example dbtVersion.
	ToolName string
}

// BuildPayload returns the exact JSON body of a delivery (spec 2.2), keys in
// the spec's order. It is deterministic: the same envelope gives the same
// bytes, so workflow replays and retries send identical bodies.
func BuildPayload(e PayloadEnvelope) []byte {
	var b orderedObject
	b.addInt("accountId", e.AccountID)
	b.addString("webhooksID", e.SubscriptionID)
	b.addString("eventId", e.EventID)
	b.addString("timestamp", e.Timestamp.UTC().Format(PayloadTimeFormat))
	b.addString("eventType", e.EventType)
	b.addString("webhookName", e.WebhookName)

	var d orderedObject
	d.addString("jobId", e.Data.JobID)
	d.addString("jobName", e.Data.JobName)
	d.addString("runId", e.Data.RunID)
	d.addString("environmentId", e.Data.EnvironmentID)
	d.addString("environmentName", e.Data.EnvironmentName)
	d.addString(e.ToolName+"Version", e.Data.ToolVersion)
	d.addString("projectName", e.Data.ProjectName)
	d.addString("projectId", e.Data.ProjectID)
	d.addString("runStatus", e.Data.RunStatus)
	d.addInt("runStatusCode", int64(e.Data.RunStatusCode))
	d.addString("runStatusMessage", e.Data.RunStatusMessage)
	d.addString("runReason", e.Data.RunReason)
	d.addString("runStartedAt", e.Data.RunStartedAt)
	switch e.EventType {
	case EventRunCompleted:
		d.addString("runFinishedAt", e.Data.RunFinishedAt)
	case EventRunErrored:
		d.addString("runErroredAt", e.Data.RunErroredAt)
	}
	b.key("data")
	b.buf = append(b.buf, d.bytes()...)
	return b.bytes()
}

// orderedObject writes a JSON object whose keys keep insertion order.
type orderedObject struct{ buf []byte }

func (o *orderedObject) addString(key, value string) {
	o.key(key)
	o.buf = appendJSONString(o.buf, value)
}

func (o *orderedObject) addInt(key string, value int64) {
	o.key(key)
	o.buf = strconv.AppendInt(o.buf, value, 10)
}

// key starts the next member: a separator, the key and its colon.
func (o *orderedObject) key(key string) {
	if len(o.buf) == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ',')
	}
	o.buf = appendJSONString(o.buf, key)
	o.buf = append(o.buf, ':')
}

// appendJSONString appends s as encoding/json writes it (the same bytes:
// HTML characters, control characters and non-ASCII text go through
// json.Marshal), quoting plain printable ASCII directly: a delivery's
// body is built for its first attempt, and json.Marshal per key and value
// was most of that.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func (o *orderedObject) bytes() []byte {
	if len(o.buf) == 0 {
		return []byte("{}")
	}
	return append(o.buf, '}')
}
