package api

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
)

// deliveryJSON is a Recent Deliveries item. Timestamps are microseconds
// since the epoch as strings, like the subscriptions' created_at.
type deliveryJSON struct {
	ID             string  `json:"id"`
	WebhookID      string  `json:"webhook_id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	JobID          string  `json:"job_id"`
	RunID          string  `json:"run_id"`
	IsTest         bool    `json:"is_test"`
	RedeliveryOf   *string `json:"redelivery_of"`
	Status         string  `json:"status"`
	AttemptCount   int     `json:"attempt_count"`
	LastStatusCode string  `json:"last_status_code"`
	LastError      string  `json:"last_error"`
	WorkflowID     string  `json:"workflow_id"`
	WorkflowRunID  string  `json:"workflow_run_id"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	CompletedAt    *string `json:"completed_at"`
}

// deliveryDetailJSON adds the attempts and the exact body sent.
type deliveryDetailJSON struct {
	deliveryJSON
	Payload  string        `json:"payload"`
	Attempts []attemptJSON `json:"attempts"`
	// OrderReleasedAt: when the delivery went although its run's
	// job.run.started was still pending (after the per-run order's bound);
	// null when it kept the order.
	OrderReleasedAt *string `json:"order_released_at"`
}

type attemptJSON struct {
	AttemptNumber   int    `json:"attempt_number"`
	StartedAt       string `json:"started_at"`
	DurationMs      int64  `json:"duration_ms"`
	StatusCode      string `json:"status_code"`
	ErrorKind       string `json:"error_kind"`
	ErrorMessage    string `json:"error_message"`
	ResponseSnippet string `json:"response_snippet"`
	// LateStatusCode and LateAfterMs: an answer that came after the
	// attempt's deadline (the attempt failed as a timeout); null otherwise.
	LateStatusCode *string `json:"late_status_code"`
	LateAfterMs    *int64  `json:"late_after_ms"`
}

type deliveryFiltersJSON struct {
	Offset int64   `json:"offset"`
	Limit  int32   `json:"limit"`
	Status *string `json:"status"`
}

func toDeliveryJSON(d deliveries.Delivery) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID, WebhookID: d.SubscriptionID, EventID: d.EventID, EventType: d.EventType,
		JobID: d.JobID, RunID: d.RunID, IsTest: d.IsTest, Status: d.Status, AttemptCount: d.AttemptCount,
		LastStatusCode: strconv.Itoa(d.LastStatusCode), LastError: d.LastError, WorkflowID: d.WorkflowID, WorkflowRunID: d.WorkflowRunID,
		CreatedAt: MicrosString(d.CreatedAt), UpdatedAt: MicrosString(d.UpdatedAt),
	}
	if d.RedeliveryOf != "" {
		out.RedeliveryOf = &d.RedeliveryOf
	}
	if d.CompletedAt != nil {
		s := MicrosString(*d.CompletedAt)
		out.CompletedAt = &s
	}
	return out
}

// subscriptionForDeliveries checks access and that the webhook is the
// account's and live, returning it for the reads of its deliveries.
func (s *Server) subscriptionForDeliveries(c *gin.Context, write bool) (deliveryreads.Webhook, error) {
	a, id, err := s.webhookTarget(c, write)
	if err != nil {
		return deliveryreads.Webhook{}, err
	}
	return s.deliveryReads.Webhook(c.Request.Context(), a, id)
}

func (s *Server) listDeliveries(c *gin.Context) {
	w, err := s.subscriptionForDeliveries(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	limit, offset, err := listWindow(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	status := c.Query("status")
	if status != "" && !slices.Contains(deliveries.Statuses, status) {
		s.writeError(c, webhooks.FieldErrorf("status", "status must be one of %s, got %q.", strings.Join(deliveries.Statuses, ", "), status))
		return
	}
	list, total, err := s.deliveryReads.ListDeliveries(c.Request.Context(), w, deliveries.ListFilter{
		Status: status, Limit: int(limit), Offset: int(min(offset, math.MaxInt32)),
	})
	if err != nil {
		s.writeError(c, err)
		return
	}
	data := make([]deliveryJSON, 0, len(list))
	for _, d := range list {
		data = append(data, toDeliveryJSON(d))
	}
	filters := deliveryFiltersJSON{Offset: offset, Limit: limit}
	if status != "" {
		filters.Status = &status
	}
	writeList(c, data, gin.H{
		"pagination": paginationJSON{TotalCount: total, Count: len(data)},
		"filters":    filters,
	})
}

func (s *Server) getDelivery(c *gin.Context) {
	w, id, err := s.deliveryTarget(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	d, err := s.deliveryReads.Delivery(c.Request.Context(), w, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := deliveryDetailJSON{deliveryJSON: toDeliveryJSON(d), Payload: string(d.Payload), Attempts: make([]attemptJSON, 0, len(d.Attempts)),
		OrderReleasedAt: microsOrNil(d.OrderReleasedAt)}
	for _, a := range d.Attempts {
		aj := attemptJSON{
			AttemptNumber: a.Number, StartedAt: MicrosString(a.StartedAt), DurationMs: a.Duration.Milliseconds(),
			StatusCode: strconv.Itoa(a.StatusCode), ErrorKind: a.ErrorKind, ErrorMessage: a.ErrorMessage,
			ResponseSnippet: a.ResponseSnippet,
		}
		if a.LateStatusCode != 0 {
			code, after := strconv.Itoa(a.LateStatusCode), a.LateAfter.Milliseconds()
			aj.LateStatusCode, aj.LateAfterMs = &code, &after
		}
		out.Attempts = append(out.Attempts, aj)
	}
	writeData(c, http.StatusOK, out)
}

// retryDelivery redelivers the exact recorded body as a new delivery.
func (s *Server) retryDelivery(c *gin.Context) {
	w, id, err := s.deliveryTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	newID, err := s.deliveries.Redeliver(c.Request.Context(), w.AccountID(), w.ID(), id)
	if err != nil {
		if webhooks.ErrorCode(err) == webhooks.EUNAVAILABLE {
			s.logger.ErrorContext(c.Request.Context(), "redeliver", "delivery_id", id, "error", err.Error())
		}
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusAccepted, gin.H{"id": newID, "redelivery_of": id, "status": deliveries.StatusPending})
}

// deliveryTarget is subscriptionForDeliveries plus the :delivery_id path
// parameter. An id that cannot be a delivery id is not found without a
// lookup: the database would refuse NUL or invalid UTF-8 with an error.
func (s *Server) deliveryTarget(c *gin.Context, write bool) (w deliveryreads.Webhook, deliveryID string, err error) {
	w, err = s.subscriptionForDeliveries(c, write)
	if err != nil {
		return deliveryreads.Webhook{}, "", err
	}
	deliveryID = c.Param("delivery_id")
	if !webhooks.IsDeliveryID(deliveryID) {
		return deliveryreads.Webhook{}, "", webhooks.Errorf(webhooks.ENOTFOUND, "Delivery not found.")
	}
	return w, deliveryID, nil
}
