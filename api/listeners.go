package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/listeners"
)

// needsListeners answers 503 on a listener route of a server that does not
// relay (no RELAY_BASE_URL, or a test without listeners).
func (s *Server) needsListeners(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.listeners == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Listening is not configured on this server (RELAY_BASE_URL is not set)."))
			return
		}
		h(c)
	}
}

// listenerRequest is the body of opening a listener.
type listenerRequest struct {
	Name       *verbatimString `json:"name"`
	EventTypes *[]string       `json:"event_types"`
	JobIDs     *jobIDList      `json:"job_ids"`
}

// listenerJSON is an opened listener: an object of its own, beside the
// spec's subscription object (its webhook, webhook_id), with the webhook's
// secret so the listening computer can verify what it is forwarded.
type listenerJSON struct {
	ID                     string `json:"id"`
	Name                   string `json:"name"`
	WebhookID              string `json:"webhook_id"`
	HMACSecret             string `json:"hmac_secret"`
	StandardWebhooksSecret string `json:"standard_webhooks_secret"`
	CreatedAt              string `json:"created_at"`
}

// openListener creates the account's listener of that name, or reuses it.
func (s *Server) openListener(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req listenerRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	in := listeners.OpenInput{EventTypes: webhooks.EventTypes}
	if req.Name != nil {
		in.Name = string(*req.Name)
	}
	if req.EventTypes != nil {
		in.EventTypes = *req.EventTypes
	}
	if req.JobIDs != nil {
		in.JobIDs = *req.JobIDs
	}
	o, err := s.listeners.Open(c.Request.Context(), a, in)
	if err != nil {
		s.writeError(c, err)
		return
	}
	code := http.StatusOK
	if o.Created {
		code = http.StatusCreated
	}
	c.Header("Cache-Control", "no-store")
	writeData(c, code, listenerJSON{
		ID: o.Listener.ID, Name: o.Listener.Name, WebhookID: o.Listener.SubscriptionID,
		HMACSecret: o.Secret, StandardWebhooksSecret: webhooks.StandardWebhooksSecret(o.Secret),
		CreatedAt: MicrosString(o.Listener.CreatedAt),
	})
}

// listenerAttemptJSON is one attempt handed to a listener: the exact
// headers and body to forward, and how long the relay waits for the
// answer.
type listenerAttemptJSON struct {
	ID             string              `json:"id"`
	DeliveryID     string              `json:"delivery_id"`
	EventType      string              `json:"event_type"`
	Attempt        int                 `json:"attempt"`
	Headers        map[string][]string `json:"headers"`
	BodyBase64     string              `json:"body_base64"`
	AnswerWithinMs int64               `json:"answer_within_ms"`
}

// nextListenerAttempt long polls the listener for its next attempt; data
// is null when none came within wait seconds.
func (s *Server) nextListenerAttempt(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	wait := listeners.DefaultWait
	if v, ok := c.GetQuery("wait"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > int(listeners.MaxWait.Seconds()) {
			s.writeError(c, webhooks.FieldErrorf("wait", "wait must be an integer number of seconds from 0 to %d, got %q.", int(listeners.MaxWait.Seconds()), v))
			return
		}
		wait = time.Duration(n) * time.Second
	}
	att, err := s.listeners.Next(c.Request.Context(), a, c.Param("listener_id"), wait)
	if err != nil {
		if c.Request.Context().Err() != nil {
			return // the client went away: nobody reads an answer
		}
		s.writeError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	if att == nil {
		writeData(c, http.StatusOK, nil)
		return
	}
	writeData(c, http.StatusOK, listenerAttemptJSON{
		ID: att.ID, DeliveryID: att.DeliveryID, EventType: att.EventType, Attempt: att.Attempt,
		Headers: att.Header, BodyBase64: base64.StdEncoding.EncodeToString(att.Body),
		AnswerWithinMs: max(time.Until(att.AnswerBy).Milliseconds(), 0),
	})
}

// listenerAnswerRequest is the local endpoint's answer to an attempt.
type listenerAnswerRequest struct {
	StatusCode *int                `json:"status_code"`
	Headers    map[string][]string `json:"headers"`
	BodyBase64 *base64Field        `json:"body_base64"`
	Error      *string             `json:"error"`
	DurationMs *int64              `json:"duration_ms"`
}

// base64Field is standard base64 in a JSON string; a bad one is a 400
// naming the field.
type base64Field []byte

func (b *base64Field) UnmarshalJSON(raw []byte) error {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return webhooks.FieldErrorf("body_base64", "body_base64 must be a string of standard base64.")
	}
	v, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return webhooks.FieldErrorf("body_base64", "body_base64 is not valid standard base64.")
	}
	*b = v
	return nil
}

// answerListenerAttempt records the local endpoint's answer; the relay
// answers the worker with it.
func (s *Server) answerListenerAttempt(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req listenerAnswerRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	ans := listeners.Answer{Header: http.Header{}}
	for name, values := range req.Headers {
		for _, v := range values {
			ans.Header.Add(name, v) // canonicalises the name
		}
	}
	if req.StatusCode != nil {
		ans.StatusCode = *req.StatusCode
	}
	if req.Error != nil {
		ans.Error = *req.Error
	}
	if req.BodyBase64 != nil {
		ans.Body = *req.BodyBase64
	}
	if req.DurationMs != nil {
		ans.Duration = time.Duration(*req.DurationMs) * time.Millisecond
		if *req.DurationMs < 0 || *req.DurationMs > int64(time.Hour/time.Millisecond) {
			s.writeError(c, webhooks.FieldErrorf("duration_ms", "duration_ms must be between 0 and 3600000."))
			return
		}
	}
	attemptID := c.Param("attempt_id")
	if err := s.listeners.Answer(c.Request.Context(), a, c.Param("listener_id"), attemptID, ans); err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, map[string]string{"id": attemptID})
}
