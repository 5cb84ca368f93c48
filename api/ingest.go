package api

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/dispatch"
)

// ingestRequest is the body of POST /internal/v1/job-run-events.
type ingestRequest struct {
	AccountID json.RawMessage `json:"accountId"`
	EventType string          `json:"eventType"`
	EventID   json.RawMessage `json:"eventId"`
	Data      eventData       `json:"data"`
}

// authenticateInternal admits callers holding INTERNAL_API_TOKEN.
func (s *Server) authenticateInternal() gin.HandlerFunc {
	return func(c *gin.Context) {
		want := s.cfg.InternalAPIToken
		if want == "" {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Event ingestion is not configured (INTERNAL_API_TOKEN is unset)."))
			return
		}
		got := bearerToken(c.Request)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			c.Header("WWW-Authenticate", `Bearer realm="internal"`)
			s.writeError(c, webhooks.Errorf(webhooks.EUNAUTHORIZED, "A valid internal API token is required."))
			return
		}
		c.Next()
	}
}

// ingestJobRunEvent accepts one job-run event: 202 means it is durable and
// every matching webhook will get it (an eventId seen before is accepted
// again and delivers nothing new).
func (s *Server) ingestJobRunEvent(c *gin.Context) {
	var req ingestRequest
	if err := decodeIngestRequest(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ev, err := s.eventFromRequest(req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	results, err := s.deliveries.Ingest(c.Request.Context(), []webhooks.Event{ev})
	if err != nil {
		s.logger.ErrorContext(c.Request.Context(), "ingest event", "event_id", ev.ID, "error", err.Error())
		s.writeError(c, err)
		return
	}
	if err := results[0].Err; err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusAccepted, gin.H{"eventId": ev.ID})
}

// ingestBatchRequest is the body of POST /internal/v1/job-run-events/batch.
type ingestBatchRequest struct {
	Events []ingestRequest `json:"events"`
}

// MaxBatchEvents bounds the events of one batch ingestion request.
const MaxBatchEvents = 500

// batchResultJSON is one event's result in a batch ingestion response, in
// the order of the request: eventId when accepted, error otherwise.
type batchResultJSON struct {
	Index     int             `json:"index"`
	EventID   string          `json:"eventId,omitempty"`
	Duplicate bool            `json:"duplicate,omitempty"`
	Error     *batchErrorJSON `json:"error,omitempty"`
}

type batchErrorJSON struct {
	Field       string `json:"field,omitempty"`
	UserMessage string `json:"user_message"`
}

// ingestJobRunEvents accepts up to MaxBatchEvents events in one request,
// stored together: 202 with a result per event (an invalid event is
// refused on its own and does not hold back the others).
func (s *Server) ingestJobRunEvents(c *gin.Context) {
	var req ingestBatchRequest
	if err := decodeIngestBatch(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	if len(req.Events) == 0 || len(req.Events) > MaxBatchEvents {
		s.writeError(c, webhooks.FieldErrorf("events", "events must hold 1 to %d events, got %d.", MaxBatchEvents, len(req.Events)))
		return
	}
	out := make([]batchResultJSON, len(req.Events))
	var valid []webhooks.Event
	var at []int
	for i, r := range req.Events {
		out[i].Index = i
		ev, err := s.eventFromRequest(r)
		if err != nil {
			out[i].Error = batchError(err)
			continue
		}
		valid, at = append(valid, ev), append(at, i)
	}
	if len(valid) > 0 {
		results, err := s.deliveries.Ingest(c.Request.Context(), valid)
		if err != nil {
			s.logger.ErrorContext(c.Request.Context(), "ingest events", "events", len(valid), "error", err.Error())
			s.writeError(c, err)
			return
		}
		for j, r := range results {
			i := at[j]
			if r.Err != nil {
				if webhooks.ErrorCode(r.Err) == webhooks.EINTERNAL {
					s.logger.ErrorContext(c.Request.Context(), "ingest event", "event_id", r.EventID, "error", r.Err.Error())
				}
				out[i].Error = batchError(r.Err)
				continue
			}
			out[i].EventID, out[i].Duplicate = r.EventID, r.Duplicate
		}
	}
	writeData(c, http.StatusAccepted, gin.H{"results": out})
}

func batchError(err error) *batchErrorJSON {
	var e *webhooks.Error
	if errors.As(err, &e) {
		return &batchErrorJSON{Field: e.Field, UserMessage: e.Message}
	}
	return &batchErrorJSON{UserMessage: webhooks.ErrorMessage(err)}
}

func (s *Server) eventFromRequest(req ingestRequest) (webhooks.Event, error) {
	accountID, err := flexInt("accountId", req.AccountID)
	if err != nil {
		return webhooks.Event{}, err
	}
	// Text that cannot be stored is refused here, on its own, before the
	// event joins a group commit whose statement it would fail.
	if fault := jsonTextFault(req.EventID); fault != "" {
		return webhooks.Event{}, textFieldError("eventId", fault)
	}
	callerID, err := flexString("eventId", req.EventID)
	if err != nil {
		return webhooks.Event{}, err
	}
	if req.Data.members == nil {
		return webhooks.Event{}, webhooks.FieldErrorf("data", "data must be an object with the run's fields.")
	}
	if req.Data.fault != nil {
		return webhooks.Event{}, req.Data.fault
	}
	data, err := runDataFromJSON(req.Data.members, s.cfg.PayloadToolName)
	if err != nil {
		return webhooks.Event{}, err
	}
	return dispatch.NewEvent(accountID, req.EventType, callerID, data)
}

// MaxEventFieldBytes bounds each string of an event's data: ids, names,
// messages. Longer values are refused, never truncated.
const MaxEventFieldBytes = 2048

// runDataFromJSON reads the run fields of spec 2.2; ids may be numbers or
// strings and go out as strings. The tool version is read from
// "<tool>Version" or "toolVersion".
func runDataFromJSON(m map[string]json.RawMessage, toolName string) (webhooks.RunData, error) {
	var d webhooks.RunData
	str := func(key string, dst *string) error {
		v, err := flexString("data."+key, m[key])
		*dst = v
		return err
	}
	fields := []struct {
		key string
		dst *string
	}{
		{"jobId", &d.JobID}, {"jobName", &d.JobName}, {"runId", &d.RunID},
		{"environmentId", &d.EnvironmentID}, {"environmentName", &d.EnvironmentName},
		{"projectName", &d.ProjectName}, {"projectId", &d.ProjectID},
		{"runStatus", &d.RunStatus}, {"runStatusMessage", &d.RunStatusMessage}, {"runReason", &d.RunReason},
		{"runStartedAt", &d.RunStartedAt}, {"runFinishedAt", &d.RunFinishedAt}, {"runErroredAt", &d.RunErroredAt},
	}
	for _, f := range fields {
		if err := str(f.key, f.dst); err != nil {
			return d, err
		}
		if len(*f.dst) > MaxEventFieldBytes {
			return d, webhooks.FieldErrorf("data."+f.key, "data.%s must be at most %d bytes.", f.key, MaxEventFieldBytes)
		}
	}
	versionKey := toolName + "Version"
	if _, ok := m[versionKey]; !ok {
		versionKey = "toolVersion"
	}
	if err := str(versionKey, &d.ToolVersion); err != nil {
		return d, err
	}
	if len(d.ToolVersion) > MaxEventFieldBytes {
		return d, webhooks.FieldErrorf("data."+versionKey, "data.%s must be at most %d bytes.", versionKey, MaxEventFieldBytes)
	}
	if raw, ok := m["runStatusCode"]; ok && !isNull(raw) {
		code, err := flexInt("data.runStatusCode", raw)
		if err != nil {
			return d, err
		}
		d.RunStatusCode = int(code)
	}
	for _, t := range []struct {
		key string
		dst *string
	}{{"runStartedAt", &d.RunStartedAt}, {"runFinishedAt", &d.RunFinishedAt}, {"runErroredAt", &d.RunErroredAt}} {
		norm, err := webhooks.NormalizeRunTime(*t.dst)
		if err != nil {
			return d, webhooks.FieldErrorf("data."+t.key, "data.%s must be an ISO 8601 time such as 2026-01-02T15:04:05Z.", t.key)
		}
		*t.dst = norm
	}
	return d, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// flexString reads a JSON string or number as a string; absent is "".
// raw is one value of a decoded body, so it is valid JSON.
func flexString(field string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if s, ok := plainJSONText(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String(), nil
	}
	return "", webhooks.FieldErrorf(field, "%s must be a string or a number.", field)
}

// plainJSONText reads, without a decoder, the JSON values most ids and
// names of an event are: a number (its literal, as json.Number gives it) or
// a string of printable ASCII without escapes. Anything else is not read
// (ok false) and goes through encoding/json. raw must be one valid JSON
// value.
func plainJSONText(raw []byte) (string, bool) {
	last := raw[len(raw)-1]
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw), last >= '0' && last <= '9' // a number ends with a digit
	case c != '"' || len(raw) < 2 || last != '"':
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(inner), true
}

// flexInt reads a JSON integer or a string of digits.
func flexInt(field string, raw json.RawMessage) (int64, error) {
	s, err := flexString(field, raw)
	if err != nil || s == "" {
		return 0, webhooks.FieldErrorf(field, "%s must be an integer.", field)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, webhooks.FieldErrorf(field, "%s must be an integer.", field)
	}
	return n, nil
}
