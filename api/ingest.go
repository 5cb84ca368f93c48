package api

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// ingestRequest is the body of POST /internal/v1/job-run-events.
type ingestRequest struct {
	AccountID json.RawMessage            `json:"accountId"`
	EventType string                     `json:"eventType"`
	EventID   json.RawMessage            `json:"eventId"`
	Data      map[string]json.RawMessage `json:"data"`
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

// ingestJobRunEvent accepts one job-run event and starts its durable
// delivery; 202 means every matching webhook will get it.
func (s *Server) ingestJobRunEvent(c *gin.Context) {
	var req ingestRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ev, err := s.eventFromRequest(c, req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.deliveries.Ingest(c.Request.Context(), ev); err != nil {
		s.logger.ErrorContext(c.Request.Context(), "ingest event", "event_id", ev.ID, "error", err.Error())
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusAccepted, gin.H{"eventId": ev.ID})
}

func (s *Server) eventFromRequest(c *gin.Context, req ingestRequest) (webhooks.Event, error) {
	accountID, err := flexInt("accountId", req.AccountID)
	if err != nil {
		return webhooks.Event{}, err
	}
	callerID, err := flexString("eventId", req.EventID)
	if err != nil {
		return webhooks.Event{}, err
	}
	if req.Data == nil {
		return webhooks.Event{}, webhooks.FieldErrorf("data", "data must be an object with the run's fields.")
	}
	data, err := runDataFromJSON(req.Data, s.cfg.PayloadToolName)
	if err != nil {
		return webhooks.Event{}, err
	}
	ev, err := deliveries.NewEvent(accountID, req.EventType, callerID, data)
	if err != nil {
		return webhooks.Event{}, err
	}
	ok, err := s.deliveries.Store().AccountExists(c.Request.Context(), accountID)
	if err != nil {
		return webhooks.Event{}, err
	}
	if !ok {
		return webhooks.Event{}, webhooks.FieldErrorf("accountId", "Account %d does not exist.", accountID)
	}
	return ev, nil
}

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
	}
	versionKey := toolName + "Version"
	if _, ok := m[versionKey]; !ok {
		versionKey = "toolVersion"
	}
	if err := str(versionKey, &d.ToolVersion); err != nil {
		return d, err
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
func flexString(field string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
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
