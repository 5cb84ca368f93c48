package api

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
)

// replayRequest is the body of POST .../deliveries/replay.
type replayRequest struct {
	Since  string   `json:"since"`
	Until  *string  `json:"until"`
	Status []string `json:"status"`
}

// replayJSON is a replay and its progress.
type replayJSON struct {
	ID         string   `json:"id"`
	WebhookID  string   `json:"webhook_id"`
	Status     string   `json:"status"`
	Since      string   `json:"since"`
	Until      *string  `json:"until"`
	Statuses   []string `json:"statuses"`
	Total      int      `json:"total"`
	Sent       int      `json:"sent"`
	CreatedAt  string   `json:"created_at"`
	FinishedAt *string  `json:"finished_at"`
}

// replayable are the statuses a replay may send again.
var replayable = []string{deliveries.StatusFailed, deliveries.StatusSkipped, deliveries.StatusCancelled}

// replayDeliveries starts a replay (write permission): 202 with its id and
// how many deliveries it will send.
func (s *Server) replayDeliveries(c *gin.Context) {
	w, err := s.subscriptionForDeliveries(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req replayRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	since, err := time.Parse(time.RFC3339, req.Since)
	if err != nil {
		s.writeError(c, webhooks.FieldErrorf("since", "since must be an RFC 3339 time such as 2026-01-02T15:04:05Z."))
		return
	}
	var until *time.Time
	if req.Until != nil {
		u, err := time.Parse(time.RFC3339, *req.Until)
		if err != nil || !u.After(since) {
			s.writeError(c, webhooks.FieldErrorf("until", "until must be an RFC 3339 time after since."))
			return
		}
		until = &u
	}
	statuses := req.Status
	if len(statuses) == 0 {
		statuses = []string{deliveries.StatusFailed, deliveries.StatusSkipped}
	}
	for _, st := range statuses {
		if !slices.Contains(replayable, st) {
			s.writeError(c, webhooks.FieldErrorf("status", "status may hold failed, skipped and cancelled, got %q.", st))
			return
		}
	}
	id, total, err := s.deliveries.Replay(c.Request.Context(), w.AccountID(), w.ID(), since, until, statuses)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "replay started", "account_id", w.AccountID(), "subscription_id", w.ID(),
		"replay_id", id, "deliveries", total)
	writeData(c, http.StatusAccepted, gin.H{"replay_id": id, "deliveries": total})
}

// getReplay shows a replay's progress (read permission).
func (s *Server) getReplay(c *gin.Context) {
	w, id, err := s.replayTarget(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.deliveryReads.Replay(c.Request.Context(), w, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toReplayJSON(r))
}

// cancelReplay stops a running replay (write permission); what it sent
// stays sent.
func (s *Server) cancelReplay(c *gin.Context) {
	w, id, err := s.replayTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.deliveries.CancelReplay(c.Request.Context(), w.AccountID(), w.ID(), id); err != nil {
		s.writeError(c, err)
		return
	}
	r, err := s.deliveryReads.Replay(c.Request.Context(), w, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toReplayJSON(r))
}

// replayTarget is subscriptionForDeliveries plus the :replay_id path
// parameter. An id that cannot be a replay id is not found without a
// lookup: the database would refuse NUL or invalid UTF-8 with an error.
func (s *Server) replayTarget(c *gin.Context, write bool) (w deliveryreads.Webhook, replayID string, err error) {
	w, err = s.subscriptionForDeliveries(c, write)
	if err != nil {
		return deliveryreads.Webhook{}, "", err
	}
	replayID = c.Param("replay_id")
	if !isReplayID(replayID) {
		return deliveryreads.Webhook{}, "", webhooks.Errorf(webhooks.ENOTFOUND, "Replay not found.")
	}
	return w, replayID, nil
}

// maxReplayIDLength bounds a replay id from a path; real ones are the
// prefix and 26 characters (webhooks.NewID).
const maxReplayIDLength = 64

// isReplayID reports whether id has the shape of a replay id: the prefix
// and text the database can hold (valid UTF-8 without control characters).
func isReplayID(id string) bool {
	return strings.HasPrefix(id, deliveries.ReplayIDPrefix) && len(id) <= maxReplayIDLength &&
		utf8.ValidString(id) && strings.IndexFunc(id, unicode.IsControl) < 0
}

func toReplayJSON(r deliveries.Replay) replayJSON {
	return replayJSON{ID: r.ID, WebhookID: r.SubscriptionID, Status: r.Status, Since: r.Since.UTC().Format(time.RFC3339),
		Until: rfc3339OrNil(r.Until), Statuses: r.Statuses, Total: r.Total, Sent: r.Sent,
		CreatedAt: MicrosString(r.CreatedAt), FinishedAt: microsOrNil(r.FinishedAt)}
}

func rfc3339OrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}
